"""`nodeflow simulate`: a dry run of the scheduler, or of the disruption controller, on Kubernetes manifests.

    nodeflow simulate -f nodepool.yaml -f workload.yaml [--instance-types catalog.yaml] [-o json|table]
    nodeflow simulate --disruption -f cluster.yaml [--now 2026-01-05T12:00:00Z] [--max-commands 50]
    nodeflow simulate --disruption --from-cluster [--kubeconfig FILE] [--context NAME]

Reads NodePool, EC2NodeClass, Pod, Deployment/ReplicaSet/StatefulSet/Job, DaemonSet, Node, PVC, PV,
StorageClass and RuntimeClass objects, and prints which NodeClaims would be launched, which pods go to
existing nodes, and why the rest stay pending. Without --instance-types it uses the built-in AWS catalog.
Invalid objects are reported on stderr (and under "errors" in JSON) and the rest is still simulated.
Exit status: 0 when the plan was computed (even with pending pods), 2 on unusable input.

With --disruption it prints the commands the disruption controller would issue now on the existing
Nodes, NodeClaims and their bound pods, NodePools, EC2NodeClasses and PodDisruptionBudgets (from the
files, or read from the cluster with --from-cluster): it decides, applies the command's effect to the
snapshot (candidates removed, replacements added carrying the moved pods), and decides again, until no
command or --max-commands; with the fleet's $/h before, after each command, and in total, and why every
remaining node is left alone (see workers.cli.disruption_dryrun). Commands of methods the controller does not
execute by default (`--disruption-methods`) are marked (JSON `executedByController: false`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from apis import manifests
from apis.instancetype import InstanceType
from scheduling import Plan, solve
from scheduling.provisioning.manifests import expand
from workers.cli import disruption_dryrun, manifest_files
from workers.cli.cluster_reads import ClusterReadError, add_context_argument, build_kube, parse_now


class InputError(Exception):
    """Input the simulation cannot start from (unreadable file, bad YAML, bad catalog)."""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="dry-run the scheduler on manifests",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        help="a manifest file (YAML or JSON; '-' = stdin); repeatable; required unless --from-cluster",
    )
    parser.add_argument("--instance-types", help="instance-type catalog (YAML or JSON list); default: built-in AWS")
    parser.add_argument("-o", "--output", choices=("json", "table"), default="table", help="output format")
    parser.add_argument("--cluster-name", default="my-cluster", help="value substituted for ${CLUSTER_NAME}")
    parser.add_argument("--region", default="us-west-2", help="region of the built-in catalog (default us-west-2)")
    parser.add_argument(
        "--disruption",
        action="store_true",
        help="simulate the disruption controller on the existing nodes instead of provisioning",
    )
    parser.add_argument(
        "--from-cluster", action="store_true", help="with --disruption: read the cluster instead of files"
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="with --from-cluster (default as kubectl's: KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    add_context_argument(parser)
    parser.add_argument("--now", default=None, help="with --disruption: decide at this RFC 3339 time (default: now)")
    parser.add_argument(
        "--max-commands",
        type=int,
        default=disruption_dryrun.MAX_COMMANDS,
        help=f"with --disruption: stop after this many commands (default {disruption_dryrun.MAX_COMMANDS})",
    )
    parser.set_defaults(func=run)


def load_documents(paths: list[str], variables: Mapping[str, str]) -> list[Any]:
    """Every document of every file (a directory: its .yaml/.yml/.json files; '-': stdin), ${NAME}
    substituted. Raises InputError naming the file and line."""
    docs: list[Any] = []
    try:
        for path in paths:
            if path == "-":
                docs.extend(manifests.load_documents(sys.stdin.read(), variables, source="<stdin>"))
            else:
                docs.extend(manifest_files.load_files([path], variables))
    except manifests.ManifestError as err:
        raise InputError(str(err)) from None
    return docs


def _read(path: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None


def load_catalog(path: str | None, region: str) -> list[InstanceType]:
    if path is None:
        try:
            from cloudprovider.aws.instancetypes.catalog import load_builtin_catalog
        except ImportError as err:
            raise InputError(f"the built-in AWS catalog is not available ({err}); pass --instance-types FILE") from None
        return list(load_builtin_catalog(region=region))
    try:
        raw = yaml.safe_load(_read(path))
    except yaml.YAMLError as err:
        raise InputError(f"{path}: not valid YAML or JSON: {err}") from None
    if not isinstance(raw, list):
        raise InputError(f"{path}: the catalog must be a list of instance types (- name: m5.large ...)")
    out: list[InstanceType] = []
    problems: list[str] = []
    for index, item in enumerate(raw):
        try:
            out.append(InstanceType.model_validate(item))
        except ValidationError as err:
            name = item.get("name", "?") if isinstance(item, dict) else "?"
            for problem in err.errors():
                where = ".".join(str(p) for p in problem["loc"])
                problems.append(f"{path}: instance type [{index}] {name}: {where}: {problem['msg']}")
    if problems:
        raise InputError("\n".join(problems))
    return out


def to_json(plan: Plan, errors: list[str]) -> str:
    body = plan.model_dump(mode="json", by_alias=True, exclude_none=True)
    body["errors"] = errors
    return json.dumps(body, indent=2)


def to_table(plan: Plan) -> str:
    lines: list[str] = []
    if plan.node_claims:
        lines.append(f"NEW NODECLAIMS ({len(plan.node_claims)}, ${sum(c.price for c in plan.node_claims):.4f}/h)")
        lines.append(f"  {'NODEPOOL':<20} {'PRICE':>9} {'PODS':>5}  INSTANCE TYPES")
        for claim in plan.node_claims:
            types = ", ".join(claim.instance_types[:4]) + (
                f" (+{len(claim.instance_types) - 4})" if len(claim.instance_types) > 4 else ""
            )
            lines.append(f"  {claim.node_pool:<20} {claim.price:>9.4f} {len(claim.pods):>5}  {types}")
    if plan.existing_nodes:
        lines.append(f"EXISTING NODES ({len(plan.existing_nodes)})")
        lines.extend(f"  {n.name:<40} {len(n.pods):>5} pods" for n in plan.existing_nodes)
    if plan.unschedulable:
        lines.append(f"PENDING ({len(plan.unschedulable)})")
        lines.extend(f"  {u.pod}: {u.reason}" for u in plan.unschedulable)
    return "\n".join(lines) if lines else "nothing to schedule"


def run(args: argparse.Namespace) -> int:
    if args.disruption:
        return run_disruption(args)
    if args.from_cluster or not args.filename:
        print("nodeflow simulate: give -f FILE (--from-cluster needs --disruption)", file=sys.stderr)
        return 2
    try:
        docs = load_documents(args.filename, {"CLUSTER_NAME": args.cluster_name})
        catalog = load_catalog(args.instance_types, args.region)
    except InputError as err:
        print(f"nodeflow simulate: {err}", file=sys.stderr)
        return 2
    expanded = expand(docs, catalog)
    for error in expanded.errors:
        print(f"error: {error}", file=sys.stderr)
    plan = solve(expanded.input)
    print(to_json(plan, expanded.errors) if args.output == "json" else to_table(plan))
    return 0


def run_disruption(args: argparse.Namespace) -> int:
    """`simulate --disruption`: replay the controller's decisions on the files or the cluster."""
    if bool(args.filename) == bool(args.from_cluster):
        print("nodeflow simulate: --disruption needs either -f FILE or --from-cluster", file=sys.stderr)
        return 2
    try:
        now = parse_now(args.now)
        catalog = load_catalog(args.instance_types, args.region)
        if args.from_cluster:
            errors: list[str] = []
            inp = read_cluster(args.kubeconfig, catalog, now, errors, getattr(args, "context", None))
        else:
            docs = load_documents(args.filename, {"CLUSTER_NAME": args.cluster_name})
            inp, errors = disruption_dryrun.input_from_manifests(docs, catalog, now)
    except (InputError, ClusterReadError, ValueError) as err:
        print(f"nodeflow simulate: {err}", file=sys.stderr)
        return 2
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    result = disruption_dryrun.replay(inp, max(0, args.max_commands))
    if args.output == "json":
        print(json.dumps(result.to_json(errors), indent=2))
    else:
        print(disruption_dryrun.to_table(result, errors))
    return 0


def read_cluster(
    kubeconfig: str | None, catalog: list[InstanceType], now: datetime, errors: list[str], context: str | None = None
) -> Any:
    """The controller's snapshot of the cluster found from `kubeconfig` and `context` as kubectl finds it
    (workers.cli.cluster_reads.build_kube; activities.disruption.snapshot); invalid objects are named in
    `errors`. Raises ClusterReadError when no client can be built or the API cannot be read."""
    from activities.disruption.snapshot import read_disruption_input

    kube = build_kube(kubeconfig, context)
    try:
        return read_disruption_input(kube, catalog, now=now, skipped=errors)
    except Exception as err:  # kube.errors, connection refused, TLS
        raise ClusterReadError(f"cannot read the cluster: {err}") from err
