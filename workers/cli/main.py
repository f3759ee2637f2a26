"""`nodeflow`: the command line. Each subcommand lives in its own module with
`add_parser(subparsers) -> None` (registering `func=run`) and `run(args) -> int`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from workers.heap import tune_collector

DESCRIPTION = (
    "nodeflow: Karpenter-compatible node autoscaling for Kubernetes on AWS, every node a durable Temporal "
    "workflow. Commands: dev (the local stack; dev interrupt: an interruption of one of its nodes), worker, "
    "simulate (dry run; --disruption: the disruption controller's), explain (why a node is or is not "
    "disrupted), drain|expire|replace|status, crds (write the CRDs), iam-policy (print the controller's IAM "
    "policy), prices refresh (write a region's on-demand price table from the AWS Pricing API)."
)

# subcommand -> module; imported lazily so `nodeflow simulate` never loads Temporal or the dev stack.
SUBCOMMANDS: dict[str, str] = {
    "dev": "workers.cli.dev",
    "dev-interrupt": "workers.cli.dev",
    "worker": "workers.cli.worker",
    "simulate": "workers.cli.simulate",
    "explain": "workers.cli.explain",
    "drain": "workers.cli.ops",
    "expire": "workers.cli.ops",
    "replace": "workers.cli.ops",
    "status": "workers.cli.ops",
    "crds": "workers.cli.crds",
    "iam-policy": "workers.cli.iam_policy",
    "prices": "workers.cli.prices",
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """Load the module of the command asked for (all of them for `nodeflow --help`); every other command
    gets a placeholder so `--help` still lists it without importing it."""
    parser = argparse.ArgumentParser(prog="nodeflow", description=DESCRIPTION)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = next((a for a in argv if not a.startswith("-")), None)
    modules = [SUBCOMMANDS[wanted]] if wanted in SUBCOMMANDS else list(dict.fromkeys(SUBCOMMANDS.values()))
    for module_name in modules:
        importlib.import_module(module_name).add_parser(subparsers)
    for name in SUBCOMMANDS:
        if name not in subparsers.choices:
            subparsers.add_parser(name, help=f"see `nodeflow {name} --help`")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    tune_collector()
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:2] == ["dev", "interrupt"]:  # `nodeflow dev interrupt NODE` is `nodeflow dev-interrupt NODE`
        args_list[:2] = ["dev-interrupt"]
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        parser.error(f"unknown command {args.command!r}")
    return int(func(args) or 0)
