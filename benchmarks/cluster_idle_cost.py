"""What an idle cluster costs in Temporal, apart from its nodes: the cluster-wide workflows (the
provisioner, the disruption controller, the garbage collector) on the local stack with no pod pending and
no node. Prints one JSON object on stdout; see benchmarks/README.md.

    python benchmarks/cluster_idle_cost.py [--window 300] [--settle 30] [--one-pod-nodes 0 | --pods 0]
        [--churn 0] [--node-reports 0]

The stack is the one `nodeflow dev` runs (default NodePool and EC2NodeClass, default worker settings).
With `--one-pod-nodes N`, scale.py's one-pod-nodes Deployment of N replicas is applied first and the
clock waits until every pod is bound (N nodes, each running one pod), so the window shows what an idle
cluster of N nodes costs: the same workflows, plus whatever grows with the nodes (history events, the
leader's watches and reads). With `--pods N`, scale.py's scale-out workload of N pods (two Deployments,
packed onto large nodes) is applied instead: an idle cluster with many pods on few nodes, which is what the
leader's pod watch and its disruption look ahead read. With `--churn S`, one of the workload's pods gets a
new label value every S seconds from the bound workload to the window's end: a cluster that is never quite
still, as a live one is not (every pod change is a watch event, and the disruption look ahead decides
again over it). With `--node-reports S`, one Node after another has its status reported again every S
seconds (a new lastHeartbeatTime on each condition): a kubelet reports at least every 5 minutes, so a
real cluster of N nodes sees N/300 reports a second. The local stack's kubelet sends those itself, 5
minutes after a Node turned Ready and every 5 minutes after that; `--node-reports` adds more at a chosen
pace.
After `--settle` seconds, every history event written in the next
`--window` seconds is counted by workflow type and event type, and the billable actions among them
(benchmarks/idle_cost.py's definition, Temporal Cloud's published one as far as history shows it) are
scaled to a day. Activity heartbeats are actions too but leave no event: they are read from the dev
server's `action` counter (by action type, namespace `default`; the server counts memo changes too,
which Temporal Cloud does not bill) and added. The CPU seconds each process of the stack used in the
window are reported too.

benchmarks/idle_cost.py measures what each running node adds (nothing, when idle); this is the fixed
part every cluster pays, whatever its size: divided by the number of nodes, it is what a small cluster
pays per node on top.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python benchmarks/cluster_idle_cost.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client

from benchmarks.idle_cost import billable_actions, event_name
from benchmarks.scale import NAMESPACE, all_pods_bound, children_cpu, one_pod_nodes_workload, rss_bytes, workload

DAY_SECONDS = 86_400.0
CHURN_LABEL = "benchmark.nodeflow.dev/churn"


HEARTBEAT = "grpc_RecordActivityTaskHeartbeat"


def _server_actions(metrics_url: str) -> Counter[str]:
    """The dev server's `action` counter in namespace `default`, by action type."""
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in ("action", "action_total") and sample.labels.get("namespace") == "default":
                out[sample.labels.get("action_type", "")] += int(sample.value)
    return out


async def _count_events(address: str, since: datetime, until: datetime) -> dict[str, Any]:
    """Events written in [since, until) by every workflow execution of the namespace, by workflow type."""
    client = await Client.connect(address)
    events: dict[str, Counter[str]] = {}
    actions: Counter[str] = Counter()
    async for execution in client.list_workflows():
        history = await client.get_workflow_handle(execution.id, run_id=execution.run_id).fetch_history()
        for event in history.events:
            when = event.event_time.ToDatetime().replace(tzinfo=UTC)
            if since <= when < until:
                events.setdefault(execution.workflow_type, Counter())[event_name(event)] += 1
                actions[execution.workflow_type] += billable_actions(event)
    return {"events": {kind: dict(counts) for kind, counts in events.items()}, "actions": dict(actions)}


def _bind(stack: Any, manifests: str, pods: int, timeout: float) -> float:
    """Apply `manifests` (a workload of `pods` pods); seconds until every pod is bound. Raises SystemExit
    when `timeout` passes first."""
    began = time.monotonic()
    stack.apply_text(manifests, "benchmark workload")
    while time.monotonic() - began < timeout:
        if all_pods_bound(stack, pods):
            return time.monotonic() - began
        time.sleep(1.0)
    raise SystemExit(f"{pods} pods were not all bound within {timeout:.0f}s")


class Churn:
    """Changes one object after another, round robin, every `every` seconds in a daemon thread, between
    `start()` and `stop()`, and counts the changes made. `kind` "pod-labels": label CHURN_LABEL of the pods
    of NAMESPACE gets a new value; "node-reports": a Node's status is reported again with a new
    lastHeartbeatTime on each condition, as a kubelet does at least every 5 minutes."""

    def __init__(self, stack: Any, every: float, kind: str = "pod-labels") -> None:
        self.stack = stack
        self.every = every
        self.kind = kind
        self.changes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="churn", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        from kube import resources as r

        kube = self.stack.kube
        pods = self.kind == "pod-labels"
        names = [o["metadata"]["name"] for o in (kube.list(r.POD, namespace=NAMESPACE) if pods else kube.list(r.NODE))]
        while names and not self._stop.wait(self.every):
            name = names[self.changes % len(names)]
            if pods:
                kube.patch(r.POD, name, {"metadata": {"labels": {CHURN_LABEL: str(self.changes)}}}, namespace=NAMESPACE)
            else:
                now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                conditions = (kube.get(r.NODE, name).get("status") or {}).get("conditions") or []
                reported = [{**c, "lastHeartbeatTime": now} for c in conditions]
                kube.patch(r.NODE, name, {"status": {"conditions": reported}}, subresource="status")
            self.changes += 1


def run(
    window: float,
    settle: float,
    one_pod_nodes: int = 0,
    pods: int = 0,
    bind_timeout: float = 600.0,
    churn: float = 0.0,
    node_reports: float = 0.0,
) -> dict[str, Any]:
    from devstack.stack import DevStack
    from workers.cli.dev import stack_config

    bound_in: float | None = None
    with tempfile.TemporaryDirectory() as state, DevStack(stack_config(state_dir=Path(state))) as stack:
        if one_pod_nodes:
            bound_in = _bind(stack, one_pod_nodes_workload(one_pod_nodes), one_pod_nodes, bind_timeout)
        elif pods:
            bound_in = _bind(stack, workload(pods), pods, bind_timeout)
        churning = [
            Churn(stack, every, kind)
            for every, kind in ((churn, "pod-labels"), (node_reports, "node-reports"))
            if every
        ]
        for churn_thread in churning:
            churn_thread.start()
        time.sleep(settle)
        since, before = datetime.now(UTC), children_cpu(stack.pids())
        actions_before = _server_actions(stack.temporal_metrics_url)
        time.sleep(window)
        until, after = datetime.now(UTC), children_cpu(stack.pids())
        worker_rss = rss_bytes(stack.pids()["worker"])
        for churn_thread in churning:
            churn_thread.stop()
        server_actions = _server_actions(stack.temporal_metrics_url) - actions_before
        counted = asyncio.run(_count_events(stack.temporal_address, since, until))
    per_day = DAY_SECONDS / window
    heartbeats = server_actions[HEARTBEAT]
    return {
        "benchmark": "cluster-idle-cost",
        "one_pod_nodes": one_pod_nodes,
        "pods": pods,
        "churn_seconds": churn,
        "node_reports_seconds": node_reports,
        "changes_made": {c.kind: c.changes for c in churning},
        "seconds_to_all_bound": round(bound_in, 1) if bound_in is not None else None,
        "window_seconds": window,
        "events_in_window_by_workflow_type": counted["events"],
        "billable_actions_per_day_by_workflow_type": {
            kind: round(count * per_day) for kind, count in sorted(counted["actions"].items())
        },
        "heartbeats_per_day": round(heartbeats * per_day),
        "billable_actions_per_day": round((sum(counted["actions"].values()) + heartbeats) * per_day),
        "server_actions_in_window_by_type": dict(sorted(server_actions.items())),
        "cpu_seconds_per_minute_by_process": {
            name: round((after[name] - before[name]) * 60.0 / window, 3) for name in sorted(after) if name in before
        },
        "worker_rss_mb_at_window_end": round(worker_rss / 2**20, 1),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/cluster_idle_cost.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--window", type=float, default=300.0, help="seconds to count events in (300)")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds to wait after the stack is up (30)")
    parser.add_argument(
        "--one-pod-nodes", type=int, default=0, help="nodes to bring up (one pod each) before the window (0)"
    )
    parser.add_argument(
        "--pods", type=int, default=0, help="pods to run, packed onto large nodes, before the window (0)"
    )
    parser.add_argument(
        "--churn", type=float, default=0.0, help="seconds between pod label changes, from bound to the end (0: none)"
    )
    parser.add_argument(
        "--node-reports",
        type=float,
        default=0.0,
        help="seconds between Node status reports (a new heartbeat time), from bound to the end (0: none)",
    )
    args = parser.parse_args(argv)
    for name in ("churn", "node_reports"):
        if getattr(args, name) < 0:
            flag = "--" + name.replace("_", "-")
            parser.error(f"{flag} {getattr(args, name)}: give 0 (none) or a positive number of seconds")
    for name in ("window", "settle"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} {getattr(args, name)}: give a positive number of seconds")
    if args.one_pod_nodes < 0:
        parser.error(f"--one-pod-nodes {args.one_pod_nodes}: give 0 or more nodes")
    if args.pods < 0 or (args.pods and args.one_pod_nodes):
        parser.error(f"--pods {args.pods}: give 0 or more pods, and not with --one-pod-nodes")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        json.dumps(
            run(
                args.window,
                args.settle,
                args.one_pod_nodes,
                args.pods,
                churn=args.churn,
                node_reports=args.node_reports,
            )
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
