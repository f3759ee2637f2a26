"""`nodeflow prices refresh --region R`: write the shipped on-demand price table of a region from the
AWS Pricing API (`pricing:GetProducts`, asked as the worker asks; cloudprovider.aws.pricing.api).

    nodeflow prices refresh --region eu-west-1                 # into the package: ships eu-west-1's table
    nodeflow prices refresh --region us-east-1 --out prices.json

The table is what the worker prices on-demand offerings with until the Pricing API answers it, or when
it cannot (cloudprovider.aws.pricing.tables); a region without one uses us-east-1's. It needs AWS credentials
allowed `pricing:GetProducts` (the default credential chain); `--endpoint-url` points it elsewhere (the
local stack answers GetProducts from the tables already shipped).
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from cloudprovider.aws.factory import fetch_price_table
from cloudprovider.aws.pricing.tables import table_file
from cloudprovider.errors import CloudProviderError


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("prices", help="refresh the shipped on-demand price tables from the AWS Pricing API",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = p.add_subparsers(dest="prices_command", required=True, metavar="SUBCOMMAND")
    refresh = sub.add_parser("refresh", help="write a region's on-demand price table from the AWS Pricing API")
    refresh.add_argument("--region", required=True, help="the region whose prices to read, e.g. eu-west-1")
    refresh.add_argument("--out", default="", help="file to write (default: the package's table for the region)")
    refresh.add_argument("--endpoint-url", default=None, help="the Pricing API endpoint (default: AWS's)")
    refresh.set_defaults(func=run)


def default_path(region: str) -> Path:
    """Where the package keeps `region`'s shipped table."""
    return Path(str(resources.files("cloudprovider.aws").joinpath(table_file(region))))


def run(args: argparse.Namespace) -> int:
    region = args.region.strip()
    if not region or any(c.isspace() or c == "/" for c in region):
        raise SystemExit(f"nodeflow prices refresh: --region {args.region!r} must be a region name, e.g. eu-west-1")
    try:
        table = fetch_price_table(region, args.endpoint_url)
    except CloudProviderError as error:
        raise SystemExit(f"nodeflow prices refresh: reading the AWS Pricing API failed: {error}") from error
    out = Path(args.out) if args.out else default_path(region)
    out.write_text(table.to_json())
    print(f"wrote {out} ({len(table.prices)} instance types, {table.currency}, as of {table.as_of})", file=sys.stderr)
    return 0
