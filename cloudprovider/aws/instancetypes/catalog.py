"""The built-in instance-type catalog for `nodeflow simulate` (no AWS account needed).

`data/catalog-<region>.json.gz` is generated, not hand-written:

    python -m devstack.aws --port 5000 &                       # the local stack's seeded, patched moto
    python -m cloudprovider.aws.instancetypes.catalog generate --endpoint-url http://127.0.0.1:5000

It holds what `AWSCloudProvider.instance_types(None)` returns there: moto's DescribeInstanceTypes and
offerings, on-demand prices from the shipped price table, spot prices as the local stack quotes them,
default kubelet settings (ENI-limited pods, 20Gi root volume). Offerings are stored as
[zone index, capacity type, price] rows to keep the file small.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from importlib import resources
from typing import Any

from apis.instancetype import InstanceType, Offering
from cloudprovider.aws.instancetypes.translate import InstanceTypeSettings

DEFAULT_ZONES = ("a", "b", "c")
FORMAT_VERSION = 1


def catalog_file(region: str) -> str:
    return f"data/catalog-{region}.json.gz"


def encode(region: str, zones: list[str], types: list[InstanceType]) -> bytes:
    """The gzip file for `types` (deterministic bytes for the same input)."""
    index = {zone: i for i, zone in enumerate(zones)}
    rows = []
    for it in sorted(types, key=lambda t: t.name):
        row: dict[str, Any] = {"name": it.name, "capacity": it.capacity, "overhead": it.overhead, "labels": it.labels}
        row["offerings"] = [[index[o.zone], o.capacity_type, o.price] for o in it.offerings if o.zone in index]
        rows.append(row)
    doc = {"version": FORMAT_VERSION, "region": region, "zones": zones, "types": rows}
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as out:
        out.write(json.dumps(doc, separators=(",", ":"), sort_keys=True).encode())
    return buffer.getvalue()


def decode(data: bytes) -> list[InstanceType]:
    doc = json.loads(gzip.decompress(data))
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"catalog format version {doc.get('version')!r} is not {FORMAT_VERSION}: regenerate it")
    zones = doc["zones"]
    # The file is generated from validated models, so skip re-validation (it would cost ~1 s).
    return [
        InstanceType.model_construct(
            name=row["name"],
            capacity=row["capacity"],
            overhead=row["overhead"],
            labels=row["labels"],
            offerings=[
                Offering.model_construct(zone=zones[z], capacity_type=ct, price=price, available=True)
                for z, ct, price in row["offerings"]
            ],
        )
        for row in doc["types"]
    ]


def load_builtin_catalog(region: str = "us-west-2") -> list[InstanceType]:
    """The shipped catalog for `region`, sorted by name. Raises ValueError naming the regions shipped."""
    package = resources.files("cloudprovider.aws")
    path = package.joinpath(catalog_file(region))
    if not path.is_file():
        shipped = sorted(p.name for p in package.joinpath("data").iterdir() if p.name.startswith("catalog-"))
        raise ValueError(f'no built-in instance-type catalog for region "{region}"; shipped: {shipped}')
    return decode(path.read_bytes())


def generate(endpoint_url: str, region: str, cluster_name: str, zones: list[str]) -> bytes:
    from cloudprovider.aws.factory import new_aws_cloud_provider

    provider = new_aws_cloud_provider(
        region,
        endpoint_url,
        cluster_name=cluster_name,
        credentials=("testing", "testing") if endpoint_url else None,
        pricing_api=False,  # the shipped table's prices, as the docstring says
    )
    return encode(region, zones, provider.catalog.instance_types(InstanceTypeSettings(), zones))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cloudprovider.aws.instancetypes.catalog")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write data/catalog-<region>.json.gz from an EC2 endpoint")
    gen.add_argument("--endpoint-url", default="http://127.0.0.1:5000", help="EC2 endpoint (the local stack's moto)")
    gen.add_argument("--region", default="us-west-2")
    gen.add_argument("--cluster-name", default="nodeflow-dev")
    gen.add_argument("--zones", default="", help="comma-separated zones (default: <region>a,b,c)")
    gen.add_argument("--output", default="", help="file to write (default: the package's data directory)")
    args = parser.parse_args(argv)
    zones = args.zones.split(",") if args.zones else [args.region + z for z in DEFAULT_ZONES]
    data = generate(args.endpoint_url, args.region, args.cluster_name, zones)
    output = args.output or str(resources.files("cloudprovider.aws").joinpath(catalog_file(args.region)))
    with open(output, "wb") as out:
        out.write(data)
    print(f"wrote {output} ({len(data)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
