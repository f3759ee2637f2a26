"""Scale benchmarks of issue 4. Each run prints one JSON object on stdout; see benchmarks/README.md.

    python benchmarks/scale.py --pods 1000
        Karpenter's basic scale-out workload on the embedded local stack (`DevStack`, fresh state
        dir): N/2 pods of 900m / 3100Mi and N/2 of 3500m / 28Gi, one Deployment each. The clock starts
        when both Deployments are applied (the worker is up, its provisioner running and its
        instance-type catalog loaded, as in a running cluster); the worker's RSS is sampled every
        0.25 s until every pod is bound.
        Targets: 1,000 pods bound in under 2 minutes; worker RSS P95 under 260 MB.

    python benchmarks/scale.py --pods 1000 --observability off
        The same run with the worker's metrics endpoints off (`--metrics-port 0 --temporal-metrics-port
        0`) and no OTEL_* variables in its environment; `on` (the default) serves both endpoints and
        points OTEL_EXPORTER_OTLP_ENDPOINT at a local OTLP/HTTP sink the benchmark runs (it accepts and
        discards every POST, counting those to /v1/traces). Compare the two runs' `worker_rss_peak_mb`
        and `worker_cpu_seconds` for the cost of metrics and tracing.

    python benchmarks/scale.py --one-pod-nodes 500
        The shape of Karpenter's AWS scale suite: N pods of 500m / 128Mi in one Deployment with required
        pod anti-affinity on kubernetes.io/hostname, so one node each, under the dev stack's default
        NodePool as it is (cpu limit 1000). Same clock and fields as --pods, plus the provisioning
        rounds that planned NodeClaims (from the provisioner workflow's `status` query), and
        `stack_cpu_seconds`, the CPU of the local stack's own processes (Kubernetes API emulator, kubelet
        and binder, moto) over the run.
        Targets: 500 one-pod nodes bound in under 2 minutes; the stack's CPU below the worker's.

    python benchmarks/scale.py --claims 10000 --steady
        Holds N NodeClaim workflows (the real `NodeClaimWorkflow`) in one worker process on a real
        Temporal dev server (in memory). Stand-in activities under the real activity names bring every
        claim to Running at once, so no EC2 or Kubernetes is involved: the run measures the worker's
        memory per cached workflow, (RSS once all N are Running - RSS before the first start) / N.
        Target: at most 100 KiB per cached NodeClaim workflow.

The exit status is 0 when the run completed (every pod bound / every claim Running) and 1 otherwise;
whether the targets were met is reported in the JSON (`targets_met`), not by the exit status.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.server
import json
import math
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as `python benchmarks/scale.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
from temporalio import activity
from temporalio.common import RawValue

from scheduling.provisioning.explain import LIMITS_EXCEEDED

if TYPE_CHECKING:
    from temporalio.client import Client
    from temporalio.worker import Worker

    from workers.settings import Settings

MIB = 1024 * 1024
RSS_SAMPLE_SECONDS = 0.25
BOUND_POLL_SECONDS = 0.5
NAMESPACE = "default"
TARGET_SECONDS_TO_ALL_BOUND = 120.0
TARGET_RSS_P95_MB = 260.0
TARGET_KIB_PER_WORKFLOW = 100.0
# The local stack's own processes (Temporal is the product's engine, not the stack's stand-in for AWS/EKS).
STACK_PROCESSES = ("kube-api", "kubelet", "moto")
# Karpenter's basic scale-out test: two Deployments, one of small and one of large pods.
POD_SHAPES = (("scale-small", "900m", "3100Mi"), ("scale-large", "3500m", "28Gi"))
# The default NodePool's cpu limit (1000) is below this workload's 2,200 vCPUs: lift it.
NODEPOOL_CPU_LIMIT = "100000"
TASK_QUEUE = "nodeflow-scale-bench"
CATALOG_LOADED = "instance type catalog loaded"  # the worker's log line once its catalog is warm
STEADY_RSS_SAMPLES = 8
# The worker flags of `--observability off`: both metrics endpoints off (port 0).
METRICS_OFF_ARGS = ["--metrics-port", "0", "--temporal-metrics-port", "0"]
STEADY_POLL_SECONDS = 0.5
HOLD_SAMPLE_SECONDS = 5.0


# -- shared --------------------------------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile (`pct` in 0..100) of a non-empty sequence."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[rank - 1]


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of the process `pid` so far, or None when it is gone."""
    if pid is None:
        return None
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


def peak_rss_bytes(pid: int) -> int | None:
    """The process's own peak resident set size so far (Linux's VmHWM), None when it cannot be read."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # kB
    return None


class OtlpSink:
    """A local OTLP/HTTP endpoint that accepts and discards every POST (an empty 200 is a valid OTLP
    export response), counting the requests to /v1/traces and their bytes. `start()`, `stop()`."""

    def __init__(self) -> None:
        self.trace_requests = 0
        self.trace_bytes = 0
        self._lock = threading.Lock()
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") == "/v1/traces":
                    with sink._lock:
                        sink.trace_requests += 1
                        sink.trace_bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-sink", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def observability(mode: str) -> Iterator[tuple[list[str], OtlpSink | None]]:
    """The worker's arguments for `mode` and, when `on`, the running OTLP sink; the OTEL_* variables of
    this process (which the stack's worker inherits) set for the mode meanwhile, restored after."""
    saved = {key: value for key, value in os.environ.items() if key.startswith("OTEL_")}
    for key in saved:
        del os.environ[key]
    sink = OtlpSink() if mode == "on" else None
    try:
        if sink is None:
            yield list(METRICS_OFF_ARGS), None
            return
        sink.start()
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink.endpoint
        os.environ["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
        yield [], sink
    finally:
        for key in [k for k in os.environ if k.startswith("OTEL_")]:
            del os.environ[key]
        os.environ.update(saved)
        if sink is not None:
            sink.stop()


def children_cpu(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each named stack child that is still running."""
    found = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    return {name: cpu for name, cpu in found.items() if cpu is not None}


def rss_bytes(pid: int) -> int:
    """Resident set size of the process `pid` and all its descendants."""
    proc = psutil.Process(pid)
    total = proc.memory_info().rss
    for child in proc.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


class RssSampler:
    """Samples a process's RSS (in MiB) every `interval` seconds in a daemon thread, between
    `start()` and `stop()`. A process that has exited is simply no longer sampled."""

    def __init__(self, pid: int, interval: float = RSS_SAMPLE_SECONDS) -> None:
        self.pid = pid
        self.interval = interval
        self.samples_mb: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        while True:
            try:
                self.samples_mb.append(rss_bytes(self.pid) / MIB)
            except psutil.Error:
                pass
            if self._stop.wait(self.interval):
                return


@contextmanager
def state_directory(path: Path | None) -> Iterator[Path]:
    """`path` (created) when given, else a temporary directory removed afterwards."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="nodeflow-scale-") as tmp:
        yield Path(tmp)


def poll(check: Callable[[], bool], timeout: float, interval: float) -> bool:
    """Call `check` every `interval` seconds until it returns True (True) or `timeout` passes (False)."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(interval, remaining))


# -- --pods: scale-out on the local stack -------------------------------------------------------------


@dataclass(frozen=True)
class PodsOptions:
    pods: int
    timeout: float = 600.0
    state_dir: Path | None = None
    persistent_temporal: bool = True
    one_pod_nodes: bool = False  # the one-pod-per-node shape instead of the two Deployments
    observability: str = "on"  # "off": the worker's metrics endpoints off and no OTEL_* (see observability)


def workload(pods: int) -> str:
    """The two Deployments (pods/2 replicas each) and the default NodePool's raised cpu limit."""
    docs = [
        f"""apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  limits: {{cpu: "{NODEPOOL_CPU_LIMIT}"}}
"""
    ]
    for name, cpu, memory in POD_SHAPES:
        docs.append(
            f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {NAMESPACE}}}
spec:
  replicas: {pods // 2}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: app
          image: registry.k8s.io/pause:3.9
          resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}
"""
        )
    return "---\n".join(docs)


ONE_POD_NODES_APP = "one-pod-nodes"


def one_pod_nodes_workload(pods: int) -> str:
    """One Deployment of `pods` replicas, 500m / 128Mi, each on a node of its own (required pod
    anti-affinity on kubernetes.io/hostname); the default NodePool is left as it is."""
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {ONE_POD_NODES_APP}, namespace: {NAMESPACE}}}
spec:
  replicas: {pods}
  selector: {{matchLabels: {{app: {ONE_POD_NODES_APP}}}}}
  template:
    metadata: {{labels: {{app: {ONE_POD_NODES_APP}}}}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {{labelSelector: {{matchLabels: {{app: {ONE_POD_NODES_APP}}}}}, topologyKey: kubernetes.io/hostname}}
      containers:
        - name: app
          image: registry.k8s.io/pause:3.9
          resources: {{requests: {{cpu: 500m, memory: 128Mi}}}}
"""


def provisioner_round(address: str) -> tuple[int, int, int] | None:
    """(round, NodeClaims in its plan, pods it left pending because a NodePool's limits would be exceeded)
    of the provisioner's last finished solve, by its `status` query."""
    from temporalio.client import Client
    from temporalio.service import RPCError

    from workflows.messages import Query
    from workflows.provisioner import WORKFLOW_ID

    async def query() -> tuple[int, int, int] | None:
        client = await Client.connect(address)
        try:
            status = await client.get_workflow_handle(WORKFLOW_ID).query(Query.STATUS)
        except RPCError:
            return None
        plan = status.get("last_plan") or {}
        by_limits = sum(1 for u in plan.get("unschedulable") or [] if LIMITS_EXCEEDED in (u.get("reason") or ""))
        return int(status.get("last_plan_round", 0)), len(plan.get("node_claims") or []), by_limits

    return asyncio.run(query())


def instances(stack: Any, live: bool = False) -> list[dict[str, Any]]:
    """Every EC2 instance of the stack's moto; with `live`, only those pending or running."""
    out: list[dict[str, Any]] = []
    for page in stack.ec2.get_paginator("describe_instances").paginate():
        for reservation in page.get("Reservations", []):
            out += reservation.get("Instances", [])
    return [i for i in out if i["State"]["Name"] in ("pending", "running")] if live else out


def _provisioner_running(address: str) -> bool:
    from temporalio.client import Client
    from temporalio.service import RPCError

    from workflows.provisioner import WORKFLOW_ID

    async def check() -> bool:
        client = await Client.connect(address)
        try:
            await client.get_workflow_handle(WORKFLOW_ID).describe()
        except RPCError:
            return False
        return True

    return asyncio.run(check())


def worker_warm(stack: Any) -> bool:
    """The worker is up as in a running cluster: its provisioner runs and its instance-type catalog
    is loaded (a one-off start-up cost the worker logs when done, not part of scale-out)."""
    log = stack.config.logs_dir / "worker.log"
    warmed = log.exists() and CATALOG_LOADED in log.read_text()
    return warmed and _provisioner_running(stack.temporal_address)


@contextmanager
def warm_stack(
    state_dir: Path | None, persistent_temporal: bool = True, worker_args: Sequence[str] = (), **settings: Any
) -> Iterator[Any]:
    """A fresh `DevStack` in `state_dir` (or a temporary directory), its worker given `worker_args` too,
    with `settings` (other DevStackConfig fields), yielded once the worker is warm (`worker_warm`);
    stopped on exit. Exits the program when the worker does not warm up in 120 s."""
    from devstack.stack import DevStack
    from workers.cli.dev import stack_config

    with state_directory(state_dir) as state:
        config = stack_config(
            state_dir=state, persistent_temporal=persistent_temporal, worker_args=list(worker_args), **settings
        )
        with DevStack(config) as stack:
            if not poll(lambda: worker_warm(stack), 120.0, 0.2):
                raise SystemExit(f"the worker did not start and warm up in 120 s; see {config.logs_dir}")
            yield stack


def all_pods_bound(stack: Any, pods: int) -> bool:
    """Whether at least `pods` pods exist in NAMESPACE and every one is bound. It lists the unbound pods
    first, and all of them only when none is: listing all twice a second would load the API server the
    benchmarks measure."""
    from kube import resources as r

    if stack.kube.list(r.POD, namespace=NAMESPACE, field_selector="spec.nodeName="):
        return False
    listed = stack.kube.list(r.POD, namespace=NAMESPACE)
    return len(listed) >= pods and all((p.get("spec") or {}).get("nodeName") for p in listed)


def run_pods(opts: PodsOptions) -> dict[str, Any]:
    """Run the scale-out workload once; see the module docstring for what is measured."""
    from kube import resources as r

    with (
        observability(opts.observability) as (worker_args, sink),
        warm_stack(opts.state_dir, opts.persistent_temporal, worker_args) as stack,
    ):
        worker_pid = stack.pids()["worker"]
        sampler = RssSampler(worker_pid)
        sampler.start()
        cpu_before = _cpu_seconds(worker_pid)
        children_before = children_cpu(stack.pids())
        start = time.monotonic()
        text = one_pod_nodes_workload(opts.pods) if opts.one_pod_nodes else workload(opts.pods)
        stack.apply_text(text, "scale workload")
        first_fleet: float | None = None
        all_bound: float | None = None
        first_round = provisioner_round(stack.temporal_address)
        planned: dict[int, tuple[int, int]] = {}  # round -> (NodeClaims planned, pods left by limits), after the apply
        while time.monotonic() - start < opts.timeout:
            if stack.dead_children():
                break
            if first_fleet is None and instances(stack):
                first_fleet = time.monotonic() - start
            latest = provisioner_round(stack.temporal_address)
            if latest and (latest[1] or latest[2]) and latest[0] > (first_round or (0, 0, 0))[0]:
                planned[latest[0]] = latest[1], latest[2]
            if all_pods_bound(stack, opts.pods):
                all_bound = time.monotonic() - start
                break
            time.sleep(BOUND_POLL_SECONDS)
        sampler.stop()
        bound = sum(1 for p in stack.kube.list(r.POD, namespace=NAMESPACE) if (p.get("spec") or {}).get("nodeName"))
        cpu_after = _cpu_seconds(worker_pid)
        peak = peak_rss_bytes(worker_pid)
        children_after = children_cpu(stack.pids())
        claims = stack.kube.list(r.NODECLAIM)
        nodes = stack.kube.list(r.NODE)
        problems = stack.dead_children()
        traces = (sink.trace_requests, sink.trace_bytes) if sink is not None else None
    samples = sampler.samples_mb or [0.0]
    p95 = percentile(samples, 95)
    cpu = {name: rounded(children_after[name] - children_before.get(name, 0.0)) for name in sorted(children_after)}
    stack_cpu = sum(cpu.get(name) or 0.0 for name in STACK_PROCESSES)
    result: dict[str, Any] = {
        "benchmark": "one-pod-nodes" if opts.one_pod_nodes else "scale-out",
        "pods": opts.pods,
        "rounds_planning_claims": [planned[k][0] for k in sorted(planned)],
        "rounds_pods_left_by_limits": [planned[k][1] for k in sorted(planned)],
        "pods_bound": bound,
        "nodes": len(nodes),
        "nodeclaims": len(claims),
        "instance_types": count_by(claims, "node.kubernetes.io/instance-type"),
        "seconds_to_first_create_fleet": rounded(first_fleet),
        "seconds_to_all_bound": rounded(all_bound),
        "worker_rss_p95_mb": round(p95, 1),
        "worker_rss_max_mb": round(max(samples), 1),
        "worker_rss_samples": len(sampler.samples_mb),
        "worker_rss_peak_mb": round(peak / MIB, 1) if peak is not None else None,
        "worker_cpu_seconds": rounded(cpu_after - cpu_before)
        if cpu_after is not None and cpu_before is not None
        else None,
        "worker_cpu_seconds_total": rounded(cpu_after),
        "observability": opts.observability,
        "otlp_trace_requests": traces[0] if traces else None,
        "otlp_trace_bytes": traces[1] if traces else None,
        "cpu_seconds": cpu,
        "stack_cpu_seconds": rounded(stack_cpu),
        "temporal_persistence": "sqlite-wal" if opts.persistent_temporal else "memory",
        **_targets(opts.one_pod_nodes, all_bound, p95, stack_cpu, cpu.get("worker")),
    }
    if problems:
        result["errors"] = problems
    return result


def count_by(objs: Sequence[dict[str, Any]], label: str) -> dict[str, int]:
    """How many of the objects carry each value of `label` (sorted by value; "" when unlabelled)."""
    counts: dict[str, int] = {}
    for obj in objs:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label, "")
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def _targets(
    one_pod_nodes: bool, all_bound: float | None, rss_p95_mb: float, stack_cpu: float, worker_cpu: float | None
) -> dict[str, Any]:
    """`targets` and `targets_met` of a pods run: all bound in time, and for --pods the worker's RSS P95,
    for --one-pod-nodes the local stack's own CPU (STACK_PROCESSES) below the worker's."""
    in_time = all_bound is not None and all_bound < TARGET_SECONDS_TO_ALL_BOUND
    if one_pod_nodes:
        below = worker_cpu is not None and stack_cpu < worker_cpu
        return {
            "targets": {"seconds_to_all_bound": TARGET_SECONDS_TO_ALL_BOUND, "stack_cpu_seconds": "< worker"},
            "targets_met": in_time and below,
        }
    return {
        "targets": {"seconds_to_all_bound": TARGET_SECONDS_TO_ALL_BOUND, "worker_rss_p95_mb": TARGET_RSS_P95_MB},
        "targets_met": in_time and rss_p95_mb < TARGET_RSS_P95_MB,
    }


def rounded(value: float | None) -> float | None:
    """`value` to two decimals; None stays None."""
    return None if value is None else round(value, 2)


# -- --claims N --steady: RAM per cached NodeClaim workflow --------------------------------------------


@dataclass(frozen=True)
class ClaimsOptions:
    claims: int
    timeout: float = 600.0
    concurrency: int = 64
    state_dir: Path | None = None
    hold: float = 0.0  # seconds to stay at steady state after the first reading


def standin_result(activity_name: str, claim: str) -> Any:
    """What the stand-in for NodeClaim activity `activity_name` returns for claim `claim`: a launch
    that succeeded, a Node that is found and initialized, a claim that is neither deleted nor
    deleting. Any other activity (marking, syncing, events) succeeds with its result type's defaults."""
    instance_id = "i-" + hashlib.sha256(claim.encode()).hexdigest()[:17]
    zone = "us-west-2a"
    if activity_name == "launch":
        return {
            "instance_id": instance_id,
            "instance_type": "m5.large",
            "zone": zone,
            "capacity_type": "on-demand",
            "provider_id": f"aws:///{zone}/{instance_id}",
            "node_pool": "default",
        }
    if activity_name == "register":
        return {"node_name": f"ip-{claim}.us-west-2.compute.internal", "initialization": {"initialized": True}}
    if activity_name == "check_initialized":
        return {"initialized": True}
    return _default_result(activity_name)


def _default_result(activity_name: str) -> Any:
    """{} when the real activity returns a pydantic model (its defaults are a neutral answer), else None."""
    import typing

    from pydantic import BaseModel

    from activities.nodeclaim.lifecycle import PHASES

    method = next((getattr(phase, activity_name) for phase in PHASES if hasattr(phase, activity_name)), None)
    if method is None:
        return None
    returns = typing.get_type_hints(method).get("return")
    return {} if isinstance(returns, type) and issubclass(returns, BaseModel) else None


@activity.defn(dynamic=True)
async def standin_activity(args: Sequence[RawValue]) -> Any:
    """Every activity of the claims worker: see `standin_result`."""
    payload = activity.payload_converter().from_payload(args[0].payload, dict) if args else {}
    claim = str(payload.get("name", "")) if isinstance(payload, dict) else ""
    return standin_result(activity.info().activity_type, claim)


def release_free_memory() -> None:
    """Collect garbage and hand free heap pages back to the OS (glibc `malloc_trim`): an RSS reading
    after it counts live memory, not allocator slack."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    libc_name = ctypes.util.find_library("c")
    if libc_name:
        ctypes.CDLL(libc_name).malloc_trim(0)


def _release_free_memory(marker: Path) -> None:
    """`release_free_memory`, then write `marker` (the parent reads RSS once it exists)."""
    release_free_memory()
    marker.write_text("trimmed")


def claims_worker(client: Client, settings: Settings) -> Worker:
    """The claims worker: the real NodeClaimWorkflow, one dynamic stand-in activity answering every
    activity name (see `standin_result`), on `settings.task_queue` with the worker tuning of `settings`."""
    from temporalio.worker import Worker

    from workers.temporal.workflow_runner import CompactWorkflowRunner
    from workflows.nodeclaim import NodeClaimWorkflow

    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[NodeClaimWorkflow],
        activities=[standin_activity],
        max_cached_workflows=settings.max_cached_workflows,
        max_concurrent_workflow_tasks=settings.max_concurrent_workflow_tasks,
        max_concurrent_workflow_task_polls=settings.max_concurrent_workflow_task_polls,
        nonsticky_to_sticky_poll_ratio=settings.nonsticky_to_sticky_poll_ratio,
        unsandboxed_workflow_runner=CompactWorkflowRunner(),
    )


def serve_claims_worker(address: str, task_queue: str, max_cached: int, ready_file: Path) -> None:
    """The worker child of `--claims`: `claims_worker` with the worker tuning of `workers.settings`.
    Writes `ready_file` once polling; runs until SIGTERM."""
    from workers.settings import Settings
    from workers.temporal.client import connect

    async def run() -> None:
        settings = Settings.from_env().with_values(
            temporal_address=address, task_queue=task_queue, max_cached_workflows=max_cached
        )
        client = await connect(settings)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGUSR1, lambda: _release_free_memory(ready_file.with_suffix(".trimmed")))
        async with claims_worker(client, settings):
            ready_file.write_text(json.dumps({"pid": os.getpid()}))
            await stop.wait()

    asyncio.run(run())


@dataclass
class StartReport:
    """Seconds from the first start until the last start was issued, and until the last claim was
    Running (None when the timeout passed first)."""

    seconds_to_start_all: float = 0.0
    seconds_to_steady: float | None = None


async def _start_claims(address: str, count: int, concurrency: int, timeout: float) -> StartReport:
    """Start `count` NodeClaim workflows as the worker's starter does, keeping at most `concurrency`
    of them short of Running: each lane starts one, waits (describe, which reads the workflow's own
    search attributes, not eventually consistent visibility) until its Phase is Running, then starts
    the next. Starting all at once instead builds a task queue backlog that the dev server drains at
    a few workflow tasks a second."""
    from workers.settings import Settings
    from workers.temporal.client import connect, register_search_attributes
    from workers.temporal.starter import TemporalStarter
    from workflows import search_attributes as sa
    from workflows.nodeclaim import workflow_id
    from workflows.nodeclaim_state import RUNNING, node_claim_input

    client = await connect(Settings(temporal_address=address))
    await register_search_attributes(client)
    starter = TemporalStarter(client, TASK_QUEUE, asyncio.get_running_loop(), "15m")
    names = iter(range(count))
    report = StartReport()
    began = time.monotonic()

    async def lane() -> None:
        for i in names:
            name = f"scale-{i:06d}"
            await starter.start_node_claim_async(node_claim_input(name, "", "default", None, starter.settings))
            report.seconds_to_start_all = time.monotonic() - began
            handle = client.get_workflow_handle(workflow_id(name))
            while (await handle.describe()).typed_search_attributes.get(sa.PHASE) != RUNNING:
                await asyncio.sleep(STEADY_POLL_SECONDS)

    try:
        await asyncio.wait_for(asyncio.gather(*(lane() for _ in range(min(concurrency, count)))), timeout)
    except TimeoutError:
        return report
    report.seconds_to_steady = time.monotonic() - began
    return report


def _hold(pid: int, seconds: float) -> list[int]:
    """Stay `seconds` at steady state (the claims' drift checks and continue-as-new keep running) and
    return the worker's RSS readings, one every HOLD_SAMPLE_SECONDS, sorted."""
    samples: list[int] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(min(HOLD_SAMPLE_SECONDS, max(end - time.monotonic(), 0.0)))
        samples.append(rss_bytes(pid))
    return sorted(samples)


async def _running_count(address: str) -> int:
    from temporalio.client import Client

    client = await Client.connect(address)
    query = 'WorkflowType = "NodeClaim" AND ExecutionStatus = "Running" AND Phase = "Running"'
    return (await client.count_workflows(query)).count


@dataclass(frozen=True)
class ClaimsWorkerChild:
    """The Temporal dev server and the claims worker child process on it (`claims_worker_child`)."""

    address: str
    pid: int  # the worker's
    server_pid: int
    ready_file: Path

    def trim(self) -> None:
        """gc and glibc malloc_trim in the worker (SIGUSR1), waited for: read live memory, not slack."""
        trimmed = self.ready_file.with_suffix(".trimmed")
        os.kill(self.pid, signal.SIGUSR1)
        poll(trimmed.exists, 30.0, 0.1)


@contextmanager
def claims_worker_child(state: Path, max_cached: int) -> Iterator[ClaimsWorkerChild]:
    """A Temporal dev server (in memory) and, on it, the claims worker (`--serve-claims-worker`: the real
    NodeClaimWorkflow, stand-in activities) in a child process with its cache at `max_cached`, logs in
    `state`; yielded once the worker polls and its start-up allocations settled. Both are stopped at the
    end, the worker killed (a graceful shutdown of N cached workflows proves nothing here)."""
    from devstack import temporal
    from devstack.stack.children import ChildProcess
    from devstack.stack.core import child_env
    from workers.cli.dev import stack_config

    server = temporal.TemporalDevServer(temporal.free_ports(), None, False, state / "temporal.log",
                                        stack_config(start_worker=False).search_attributes)  # fmt: skip
    server.start(attempts=temporal.PORT_ATTEMPTS, new_ports=temporal.free_ports)
    ready = state / "claims-worker.json"
    for stale in (ready, ready.with_suffix(".trimmed")):  # left by an earlier run in the same directory
        stale.unlink(missing_ok=True)
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve-claims-worker", server.address,
            "--max-cached", str(max_cached), "--ready-file", str(ready)]  # fmt: skip
    worker = ChildProcess("claims-worker", argv, state / "claims-worker.log", child_env(), 10.0)
    try:
        worker.start()
        if not poll(lambda: ready.exists() or not worker.running(), 60.0, 0.1) or not ready.exists():
            raise SystemExit(f"the claims worker did not start; log:\n{worker.log_tail()}")
        assert worker.pid is not None and server.process is not None
        time.sleep(1.0)  # let the worker's start-up allocations settle before any baseline
        yield ClaimsWorkerChild(server.address, worker.pid, server.process.pid, ready)
    finally:
        worker.stop(kill=True)
        server.stop()


def run_claims(opts: ClaimsOptions) -> dict[str, Any]:
    """Hold `opts.claims` NodeClaim workflows Running in one worker; see the module docstring."""
    with state_directory(opts.state_dir) as state, claims_worker_child(state, opts.claims + 100) as worker:
        before = rss_bytes(worker.pid)
        report = asyncio.run(_start_claims(worker.address, opts.claims, opts.concurrency, opts.timeout))
        steady = report.seconds_to_steady is not None
        # Visibility is eventually consistent: give the count a moment to catch up.
        poll(lambda: asyncio.run(_running_count(worker.address)) >= opts.claims, 30.0 if steady else 0.0, 1.0)
        after_samples = []
        for _ in range(STEADY_RSS_SAMPLES):
            after_samples.append(rss_bytes(worker.pid))
            time.sleep(RSS_SAMPLE_SECONDS)
        after = max(after_samples)
        held = _hold(worker.pid, opts.hold)
        worker.trim()
        after_trim = rss_bytes(worker.pid)
        running = asyncio.run(_running_count(worker.address))
        worker_cpu = _cpu_seconds(worker.pid)
        server_cpu = _cpu_seconds(worker.server_pid)
    per_workflow_kib = (after - before) / 1024 / max(running, 1)
    held_fields = {}
    if held:
        held_fields = {
            "hold_seconds": opts.hold,
            "rss_per_cached_workflow_kib_held_median": round(
                (held[len(held) // 2] - before) / 1024 / max(running, 1), 1
            ),
            "rss_per_cached_workflow_kib_held_max": round((held[-1] - before) / 1024 / max(running, 1), 1),
        }
    return {
        "benchmark": "steady-claims",
        "claims": opts.claims,
        "claims_running": running,
        "worker_rss_mb_before": round(before / MIB, 1),
        "worker_rss_mb_after": round(after / MIB, 1),
        "worker_rss_mb_after_trim": round(after_trim / MIB, 1),
        "rss_per_cached_workflow_kib_after_trim": round((after_trim - before) / 1024 / max(running, 1), 1),
        "rss_per_cached_workflow_kib": round(per_workflow_kib, 1),
        "seconds_to_start_all": round(report.seconds_to_start_all, 2),
        "seconds_to_steady": rounded(report.seconds_to_steady),
        "claims_per_second_to_running": round(running / report.seconds_to_steady, 1)
        if report.seconds_to_steady
        else None,
        **held_fields,
        "worker_cpu_seconds": rounded(worker_cpu),
        "temporal_cpu_seconds": rounded(server_cpu),
        "start_concurrency": opts.concurrency,
        "max_cached_workflows": opts.claims + 100,
        "targets": {"rss_per_cached_workflow_kib": TARGET_KIB_PER_WORKFLOW},
        "targets_met": steady and per_workflow_kib <= TARGET_KIB_PER_WORKFLOW,
    }


# -- command line --------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/scale.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--pods", type=int, help="scale-out: this many pods, half of each shape (even, >= 2)")
    mode.add_argument("--one-pod-nodes", type=int, help="this many pods, one node each, under the default NodePool")
    mode.add_argument("--claims", type=int, help="with --steady: this many NodeClaim workflows in one worker")
    mode.add_argument("--serve-claims-worker", metavar="TEMPORAL_ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--steady", action="store_true", help="with --claims: hold them Running, measure RAM")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds (600)")
    parser.add_argument("--concurrency", type=int, default=64, help="with --claims: starts in flight at once (64)")
    parser.add_argument("--state-dir", type=Path, default=None, help="keep state and logs here (default: a temp dir)")
    parser.add_argument(
        "--observability",
        choices=("on", "off"),
        default="on",
        help="with --pods/--one-pod-nodes: the worker's metrics and tracing on (metrics endpoints, OTLP to a "
        "local sink) or off (--metrics-port 0, no OTEL_*) (on)",
    )
    parser.add_argument(
        "--in-memory-temporal",
        action="store_true",
        help="with --pods: Temporal in memory instead of the dev stack's SQLite (WAL) file",
    )
    parser.add_argument(
        "--hold",
        type=float,
        default=0.0,
        help="with --claims: then stay this many seconds at steady state and report RSS over it (0)",
    )
    parser.add_argument("--max-cached", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--ready-file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_claims_worker is not None:
        if args.ready_file is None or args.max_cached < 1:
            parser.error("--serve-claims-worker needs --ready-file and --max-cached")
        return args
    if args.pods is not None and (args.pods < 2 or args.pods % 2):
        parser.error(f"--pods {args.pods}: give an even number, at least 2 (half the pods have each shape)")
    if args.one_pod_nodes is not None and args.one_pod_nodes < 1:
        parser.error(f"--one-pod-nodes {args.one_pod_nodes}: give at least 1")
    if args.claims is not None and args.claims < 1:
        parser.error(f"--claims {args.claims}: give at least 1")
    if args.claims is not None and not args.steady:
        parser.error("--claims needs --steady (hold the claims Running and measure the worker's RAM)")
    if args.steady and args.claims is None:
        parser.error("--steady goes with --claims N")
    if args.hold < 0:
        parser.error(f"--hold {args.hold}: give a number of seconds, at least 0")
    if args.concurrency < 1:
        parser.error(f"--concurrency {args.concurrency}: give at least 1")
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout}: give a positive number of seconds")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_claims_worker is not None:
        serve_claims_worker(args.serve_claims_worker, TASK_QUEUE, args.max_cached, args.ready_file)
        return 0
    result: dict[str, Any]
    if args.pods is not None or args.one_pod_nodes is not None:
        opts = PodsOptions(
            args.pods or args.one_pod_nodes, args.timeout, args.state_dir,
            persistent_temporal=not args.in_memory_temporal, one_pod_nodes=args.one_pod_nodes is not None,
            observability=args.observability,
        )  # fmt: skip
        result = run_pods(opts)
        done = result["seconds_to_all_bound"] is not None
    else:
        result = run_claims(ClaimsOptions(args.claims, args.timeout, args.concurrency, args.state_dir, args.hold))
        done = result["seconds_to_steady"] is not None
    print(json.dumps(result))
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
