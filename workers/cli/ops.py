"""`nodeflow drain|expire|replace NODE_OR_NODECLAIM` and `nodeflow status [NAME]`: operate NodeClaim workflows.

- `drain`, `expire`, `replace` signal the workflow `nodeclaim-<name>` (the same as `temporal workflow signal
  --workflow-id nodeclaim-<name> --name drain`). A Node name is resolved to its NodeClaim through the
  Kubernetes API (the claim whose status.nodeName is the node). The workflow forwards `replace` to the
  disruption controller (workflows.disruption), which carries it out; its `status` query says whether it
  was done or skipped.
- `status` without a name lists the running NodeClaim workflows through Temporal visibility (filters
  `--node-pool`, `--phase`), with their search attributes and one-line memo summary; with a name it queries
  the workflow's `status`.

Settings (Temporal address, namespace) come from the worker's flags and environment (workers.settings).
The cluster is found as kubectl finds it (workers.cli.cluster_reads.build_kube): `--kubeconfig`, `--context`,
then KUBECONFIG, then ~/.kube/config, then in-cluster. Exit codes: 0 done, 1 not found, not running or
no cluster credentials, 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import TextIO

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from kube import resources as r
from kube.errors import NotFoundError
from kube.types import Kube
from workers import settings as settings_mod
from workers.cli.cluster_reads import ClusterReadError, add_context_argument, build_kube
from workers.cli.process_exit import exiting_after
from workers.temporal.client import TemporalSettingError, connect
from workflows import search_attributes as sa
from workflows.messages import NodeClaimSignal
from workflows.nodeclaim import NodeClaimWorkflow, workflow_id
from workflows.nodeclaim_state import PHASES, NodeClaimState, state_json

SIGNALS = {
    NodeClaimSignal.DRAIN: "cordon and drain the node, then terminate it",
    NodeClaimSignal.EXPIRE: "expire the node now (condition Expired), then drain and terminate it",
    NodeClaimSignal.REPLACE: (
        "have the disruption controller launch a replacement, then drain this node once it is Initialized"
    ),
}
COLUMNS = ("NAME", "NODEPOOL", "PHASE", "INSTANCE-TYPE", "ZONE", "CAPACITY", "NODE")


class OpsError(Exception):
    """A user-facing failure: the message says what was not found and what to do."""


@dataclass(frozen=True)
class ClaimRow:
    """One running NodeClaim workflow as visibility shows it."""

    name: str
    node_pool: str = ""
    phase: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    node_name: str = ""
    summary: str = ""

    def cells(self) -> tuple[str, ...]:
        return (
            self.name,
            self.node_pool,
            self.phase,
            self.instance_type,
            self.zone,
            self.capacity_type,
            self.node_name,
        )


# -- pure parts ------------------------------------------------------------------------------------------


def resolve_claim_name(kube: Kube, name: str) -> str:
    """NODE_OR_NODECLAIM -> the NodeClaim's name: a NodeClaim of that name, else the claim whose
    status.nodeName is that Node. Raises OpsError naming what was looked for."""
    try:
        kube.get(r.NODECLAIM, name)
        return name
    except NotFoundError:
        pass
    owners = sorted(
        c["metadata"]["name"] for c in kube.list(r.NODECLAIM) if (c.get("status") or {}).get("nodeName") == name
    )
    if not owners:
        raise OpsError(
            f'no NodeClaim named "{name}" and no NodeClaim whose status.nodeName is "{name}": '
            "check the name with `kubectl get nodeclaims` or `kubectl get nodes`"
        )
    return owners[0]


def visibility_query(node_pool: str | None = None, phase: str | None = None) -> str:
    """The visibility list query of running NodeClaim workflows, optionally filtered."""
    parts = ['WorkflowType="NodeClaim"', 'ExecutionStatus="Running"']
    if node_pool:
        parts.append(f'{sa.NODE_POOL.name}="{_quote(node_pool)}"')
    if phase:
        parts.append(f'{sa.PHASE.name}="{_quote(phase)}"')
    return " AND ".join(parts)


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def format_table(rows: Sequence[ClaimRow]) -> str:
    """Aligned columns, rows sorted by name."""
    data = [COLUMNS, *(row.cells() for row in sorted(rows, key=lambda row: row.name))]
    widths = [max(len(line[i]) for line in data) for i in range(len(COLUMNS))]
    return "\n".join("   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in data)


def format_state(state: NodeClaimState, output: str) -> str:
    """One claim's queried state as JSON or as `key: value` lines."""
    doc = state_json(state)
    if output == "json":
        return json.dumps(doc, indent=2, sort_keys=True)
    lines = [state.summary()]
    for key in ("phase", "instance_id", "node_name", "waiting_for", "termination_reason", "failure"):
        if doc.get(key):
            lines.append(f"  {key}: {doc[key]}")
    if state.conditions:
        lines.append(f"  conditions: {state.conditions_summary()}")
    if state.drift_reason:
        lines.append(f"  drifted: {state.drift_reason}: {state.drift_message}")
    return "\n".join(lines)


# -- Temporal --------------------------------------------------------------------------------------------


async def signal_claim(client: Client, name: str, signal: NodeClaimSignal, reason: str) -> None:
    """Signal `nodeclaim-<name>`; OpsError when no such workflow is running."""
    try:
        await client.get_workflow_handle(workflow_id(name)).signal(signal, reason)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise OpsError(
                f'no running workflow "{workflow_id(name)}": the NodeClaim {name} is not managed by this Temporal '
                "namespace (see `nodeflow status`)"
            ) from err
        raise


async def list_claims(client: Client, node_pool: str | None = None, phase: str | None = None) -> list[ClaimRow]:
    """Running NodeClaim workflows from visibility, sorted by name."""
    rows: list[ClaimRow] = []
    async for execution in client.list_workflows(visibility_query(node_pool, phase)):
        if execution.status not in (None, WorkflowExecutionStatus.RUNNING):
            continue
        attrs = execution.typed_search_attributes
        summary = await execution.memo_value("summary", "")
        rows.append(
            ClaimRow(
                name=execution.id.removeprefix("nodeclaim-"),
                node_pool=attrs.get(sa.NODE_POOL) or "",
                phase=attrs.get(sa.PHASE) or "",
                instance_type=attrs.get(sa.INSTANCE_TYPE) or "",
                zone=attrs.get(sa.ZONE) or "",
                capacity_type=attrs.get(sa.CAPACITY_TYPE) or "",
                node_name=attrs.get(sa.NODE_NAME) or "",
                summary=str(summary or ""),
            )
        )
    return sorted(rows, key=lambda row: row.name)


QUERY_ATTEMPTS = 3
QUERY_TIMEOUT = timedelta(seconds=10)
QUERY_RETRY_PAUSE_SECONDS = 1.0


def _timed_out(err: RPCError) -> bool:
    """The server's deadline passed, or the client's `rpc_timeout` did (that one comes as CANCELLED
    "Timeout expired")."""
    message = err.message.lower()
    return err.status == RPCStatusCode.DEADLINE_EXCEEDED or "deadline" in message or "timeout expired" in message


async def query_claim(
    client: Client, name: str, attempts: int = QUERY_ATTEMPTS, timeout: timedelta = QUERY_TIMEOUT
) -> NodeClaimState:
    """The `status` query of `nodeclaim-<name>`. A query that times out (`timeout` each) is asked again, up
    to `attempts` times: one landing while the workflow continues as new can miss its deadline. OpsError
    when there is no such workflow, or when no worker answered in time."""
    handle = client.get_workflow_handle(workflow_id(name))
    for attempt in range(1, attempts + 1):
        try:
            return await handle.query(NodeClaimWorkflow.status, rpc_timeout=timeout)
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                raise OpsError(
                    f'no workflow "{workflow_id(name)}": see `nodeflow status` for the running ones'
                ) from err
            if not _timed_out(err):
                raise
            if attempt == attempts:
                raise OpsError(
                    f'"{workflow_id(name)}" did not answer the status query {attempts} times in a row: '
                    "is a nodeflow worker running on its task queue? (`temporal task-queue describe`)"
                ) from err
        await asyncio.sleep(QUERY_RETRY_PAUSE_SECONDS)
    raise AssertionError("unreachable")


# -- commands --------------------------------------------------------------------------------------------


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `drain`, `expire`, `replace` and `status`, each with `func`."""
    for name in SIGNALS:
        _add_signal(subparsers, name)
    _add_status(subparsers)


def _add_signal(subparsers: argparse._SubParsersAction, name: NodeClaimSignal) -> None:  # type: ignore[type-arg]
    help_text = SIGNALS[name]
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    parser.add_argument("target", metavar="NODE_OR_NODECLAIM", help="a Node name or a NodeClaim name")
    parser.add_argument("--reason", default="", help="recorded as the termination reason")
    settings_mod.add_arguments(parser)
    add_context_argument(parser)
    parser.set_defaults(func=exiting_after(run_signal), signal=name)


def _add_status(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("status", help="list NodeClaim workflows, or show one")
    parser.add_argument("name", nargs="?", metavar="NAME", help="a NodeClaim or Node name (omit to list all)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument("--node-pool", default=None, help="only claims of this NodePool")
    parser.add_argument("--phase", default=None, choices=PHASES, help="only claims in this phase")
    settings_mod.add_arguments(parser)
    add_context_argument(parser)
    parser.set_defaults(func=exiting_after(run_status))


def _settings(args: argparse.Namespace) -> settings_mod.Settings:
    """The settings, or OpsError naming the bad one."""
    try:
        return settings_mod.Settings.from_env().with_args(args)
    except ValueError as problem:
        raise OpsError(str(problem)) from None


def _kube(args: argparse.Namespace) -> Kube:
    """The cluster from --kubeconfig/--context and kubectl's defaults; OpsError naming what was tried."""
    try:
        return build_kube(args.kubeconfig, args.context)
    except ClusterReadError as problem:
        raise OpsError(str(problem)) from None


def _guard(body: Callable[[], int], err: TextIO) -> int:
    try:
        return body()
    except (OpsError, TemporalSettingError) as problem:
        print(f"error: {problem}", file=err)
        return 1


def run_signal(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    def body() -> int:
        settings = _settings(args)
        claim = resolve_claim_name(_kube(args), args.target)

        async def send() -> None:
            client = await connect(settings)
            await signal_claim(client, claim, args.signal, args.reason)

        asyncio.run(send())
        via = "" if claim == args.target else f" (node {args.target})"
        print(f"{args.signal} sent to NodeClaim {claim}{via}", file=out)
        return 0

    return _guard(body, err)


def run_status(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    def body() -> int:
        settings = _settings(args)
        if args.name:
            claim = _resolve_quietly(args, args.name)

            async def one() -> NodeClaimState:
                return await query_claim(await connect(settings), claim)

            print(format_state(asyncio.run(one()), args.output), file=out)
            return 0

        async def many() -> list[ClaimRow]:
            return await list_claims(await connect(settings), args.node_pool, args.phase)

        rows = asyncio.run(many())
        if args.output == "json":
            print(json.dumps([asdict(row) for row in rows], indent=2), file=out)
        else:
            print(format_table(rows), file=out)
        return 0

    return _guard(body, err)


def _resolve_quietly(args: argparse.Namespace, name: str) -> str:
    """A Node name becomes its claim's name when the API answers; otherwise the name is used as given
    (status works from Temporal alone, e.g. after the cluster is gone)."""
    try:
        return resolve_claim_name(_kube(args), name)
    except OpsError:
        return name
    except Exception:  # no kubeconfig / API unreachable: Temporal still knows the workflow
        return name


__all__ = [
    "ClaimRow",
    "OpsError",
    "add_parser",
    "format_state",
    "format_table",
    "list_claims",
    "query_claim",
    "resolve_claim_name",
    "signal_claim",
    "visibility_query",
]
