"""`nodeflow dev`: run the product on the embedded local stack (Temporal dev server and UI, seeded
moto, the Kubernetes API emulator, simulated kubelet and pod binder, and the worker).

Interactive (the default): start, print where everything is, run until Ctrl-C or SIGTERM.
Headless: `--apply FILE ... --until-settled --timeout S -o json` applies the files, waits until the
cluster settles, prints a summary on stdout and exits 0 (settled), 1 (not settled by the timeout,
or a component died) or 2 (bad usage, unreadable or unappliable files, a port already taken, or the
dev stack not installed).

With an interruption queue (`--interruption-queue`, by default the cluster's name) the stack creates
that SQS queue in moto, with the EventBridge rules that feed it, and the worker consumes it; `nodeflow
dev interrupt NODE` (also spelt `dev-interrupt`) puts an interruption event for a node of the running
stack on EventBridge, as EC2 would.

This module is the composition root that wires the product into the dev stack, the separate
distribution `nodeflow-devstack` (devstack/ in the repository, never in the product's wheel or image):
the only product module that imports `devstack`, and the one that gives it the product's inputs
(`stack_config`: the search attributes, the worker's command line and the CRDs in `deploy/crds`).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from workers.log_format import add_argument as add_log_format_argument
from workers.log_format import configure_logging, log_format
from workflows import search_attributes as sa

if TYPE_CHECKING:
    from devstack.stack import DevStack, DevStackConfig

EXIT_SETTLED = 0
EXIT_NOT_SETTLED = 1
EXIT_USAGE = 2
# devstack.aws.interruption.KINDS, spelt here because the dev stack is imported only when a command runs
INTERRUPTION_KINDS = ("spot", "scheduled-change", "stopping")

log = logging.getLogger("nodeflow.dev")


# The CRDs the product generates from its models (`nodeflow crds deploy/crds`), in the checkout the
# product runs from (`make` installs it editable); the dev stack applies them at start so the emulator
# defaults NodePools, NodeClaims and EC2NodeClasses from their schemas as a real API server does.
CRDS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"
# The chart's RBAC rules (its ClusterRole's and Role's, which its templates include): the dev stack grants
# the worker's ServiceAccount exactly these, so the worker runs there with what an install gives it.
RBAC_RULES = Path(__file__).resolve().parents[2] / "deploy" / "charts" / "nodeflow" / "rbac-rules.yaml"

NOT_INSTALLED = (
    "the dev stack is not installed in this environment: `make` installs it into .venv/, "
    "or `pip install ./devstack` from a nodeflow checkout"
)


MOTO_ACCOUNT = "123456789012"  # moto's default account: the stack's resources and IAM users live there


def _worker_aws_policy(settings: dict[str, Any]) -> dict[str, Any]:
    """`nodeflow iam-policy` for the stack the settings describe (DevStackConfig's defaults otherwise)."""
    from cloudprovider.aws.iam_policy import controller_policy
    from devstack.stack import config as c

    cluster = settings.get("cluster_name") or c.DEFAULT_CLUSTER_NAME
    queue = settings.get("interruption_queue") or None
    region = settings.get("region") or c.DEFAULT_REGION
    return controller_policy(cluster, account=MOTO_ACCOUNT, region=region, interruption_queue=queue)


def stack_config(log_format: str | None = None, **settings: Any) -> DevStackConfig:
    """A `DevStackConfig` that runs this product: its custom search attributes (every Keyword of
    `workflows.search_attributes.ALL`), its worker (`python -m workers.cli worker` on this
    interpreter, logging in `log_format` when given, else as NODEFLOW_LOG_FORMAT says), its CRDs
    (`CRDS_DIR`, when the product runs from a checkout that has it; a `crds` setting replaces them) and
    the chart's RBAC rules for the worker's ServiceAccount (`RBAC_RULES`, likewise; `rbac_rules`) and
    the controller's IAM policy (`nodeflow iam-policy` for moto's account 123456789012, the stack's region,
    cluster and interruption queue; `worker_aws_policy`), which moto enforces by action on the worker's
    credentials, with `settings` (any other DevStackConfig field) as given. For `nodeflow dev`, tests and
    benchmarks alike. The worker inherits this process's environment, OTEL_* variables included."""
    from devstack.stack import DevStackConfig

    settings.setdefault("crds", [CRDS_DIR] if CRDS_DIR.is_dir() else [])
    settings.setdefault("rbac_rules", RBAC_RULES if RBAC_RULES.is_file() else None)
    settings.setdefault("worker_aws_policy", _worker_aws_policy(settings))
    worker = [sys.executable, "-m", "workers.cli", "worker"]
    return DevStackConfig(
        search_attributes=[(key.name, "Keyword") for key in sa.ALL],
        worker_command=[*worker, "--log-format", log_format] if log_format else worker,
        **settings,
    )


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("dev", help="run nodeflow on the embedded local stack", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    try:
        from devstack.stack import config as c
    except ModuleNotFoundError as exc:  # the product installed without the dev stack (e.g. the worker image)
        if exc.name not in ("devstack", "devstack.stack"):
            raise
        p.set_defaults(func=_not_installed)
        subparsers.add_parser("dev-interrupt", help="see `nodeflow dev-interrupt --help`").set_defaults(
            func=_not_installed
        )
        return
    p.add_argument("--temporal-port", type=int, default=c.DEFAULT_TEMPORAL_PORT, help="Temporal gRPC (0 = free)")
    p.add_argument("--ui-port", type=int, default=c.DEFAULT_UI_PORT, help="Temporal UI (0 = free)")
    p.add_argument("--kube-port", type=int, default=c.DEFAULT_KUBE_PORT, help="Kubernetes API, HTTPS (0 = free)")
    p.add_argument("--moto-port", type=int, default=c.DEFAULT_MOTO_PORT, help="moto AWS endpoint (0 = free)")
    p.add_argument(
        "--cluster-name",
        default=c.DEFAULT_CLUSTER_NAME,
        help="${CLUSTER_NAME} in applied files; karpenter.sh/discovery tag of seeded subnets/SGs",
    )
    p.add_argument(
        "--interruption-queue",
        default=None,
        metavar="NAME",
        help="SQS queue created in moto and consumed by the worker (default: the cluster name, as Karpenter's "
        "getting-started names it; '' = no interruption handling)",
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        default=c.DEFAULT_STATE_DIR,
        help="kubeconfig, Temporal db and logs/ (default .nodeflow)",
    )
    p.add_argument(
        "--node-ready-delay",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how long a simulated node takes from joining to Ready (default 1; a real EC2 node takes tens of "
        "seconds: set 30 to watch replacements and drains at that pace)",
    )
    p.add_argument("--no-ui", action="store_true", help="run the Temporal server without its web UI")
    p.add_argument("--no-worker", action="store_true", help="start the stack without the nodeflow worker")
    p.add_argument(
        "--apply",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="apply this manifest after start-up (repeatable)",
    )
    p.add_argument(
        "--until-settled", action="store_true", help="headless: wait until settled or --timeout, print a summary, exit"
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds --until-settled waits (default 300)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text", help="summary format")
    p.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG")
    add_log_format_argument(p)
    p.set_defaults(func=run)
    add_interrupt_parser(subparsers, c.DEFAULT_STATE_DIR)


def add_interrupt_parser(subparsers: Any, default_state_dir: Path) -> None:
    """`nodeflow dev-interrupt NODE [--kind KIND]`: rehearse an interruption on the running local stack."""
    p = subparsers.add_parser(
        "dev-interrupt",
        help="put an interruption event for a node of the running local stack on its interruption queue",
        description="Put an EC2 interruption event for NODE (a Node or NodeClaim name) on the local stack's "
        "interruption queue, as EventBridge would: a spot interruption warning (the default), an AWS Health "
        "scheduled change, or a state change to stopping. The worker then disrupts the node as Karpenter does.",
    )
    p.add_argument("node", metavar="NODE", help="a Node or NodeClaim name")
    p.add_argument(
        "--kind",
        choices=INTERRUPTION_KINDS,
        default=INTERRUPTION_KINDS[0],
        help="the event: spot (interruption warning; its offering is also avoided), scheduled-change, stopping",
    )
    p.add_argument("--state-dir", type=Path, default=default_state_dir, help="the running stack's state directory")
    p.add_argument("--queue", default=None, help="the queue's name (default: the only queue the stack's moto has)")
    p.set_defaults(func=run_interrupt)


def _not_installed(args: argparse.Namespace) -> int:
    print(f"nodeflow dev: {NOT_INSTALLED}", file=sys.stderr)
    return EXIT_USAGE


class _Stop(Exception):
    """Raised in the main thread by SIGTERM/SIGINT so every `finally` runs."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _check_args(args: argparse.Namespace) -> str | None:
    for flag in ("temporal_port", "ui_port", "kube_port", "moto_port"):
        port = getattr(args, flag)
        if not 0 <= port < 65536:
            return f"--{flag.replace('_', '-')} {port} is not a port: use 1-65535, or 0 for a free one"
    if args.timeout <= 0:
        return f"--timeout {args.timeout} must be a positive number of seconds"
    if args.node_ready_delay < 0:
        return f"--node-ready-delay {args.node_ready_delay} must be 0 or more seconds"
    try:
        log_format(args.log_format)
    except ValueError as exc:
        return str(exc)
    return None


def interruption_queue(args: argparse.Namespace) -> str:
    """The interruption queue's name: `--interruption-queue` as given ("" = none), else the cluster's
    name. Karpenter's getting-started CloudFormation template names the SQS queue after the cluster and
    installs Karpenter with `settings.interruptionQueue` set to the cluster name; the local stack does
    the same, so `make run` handles interruptions as a cluster set up that way does."""
    return str(args.cluster_name if args.interruption_queue is None else args.interruption_queue)


def run(args: argparse.Namespace) -> int:
    problem = _check_args(args)
    if problem:
        print(f"nodeflow dev: {problem}", file=sys.stderr)
        return EXIT_USAGE
    fmt = log_format(args.log_format)
    configure_logging(logging.DEBUG if args.verbose else logging.INFO, fmt)

    from devstack.apply import ManifestError, load_file
    from devstack.stack import DevStack, PortInUseError

    try:  # fail on unreadable files before spending seconds on start-up
        for path in args.apply:
            load_file(path, {"CLUSTER_NAME": args.cluster_name})
        config = stack_config(
            state_dir=args.state_dir, temporal_port=args.temporal_port, ui_port=args.ui_port,
            kube_port=args.kube_port, moto_port=args.moto_port, cluster_name=args.cluster_name,
            ui=not args.no_ui, start_worker=not args.no_worker, interruption_queue=interruption_queue(args),
            node_ready_delay=args.node_ready_delay, log_format=fmt,
        )  # fmt: skip
    except (ManifestError, ValueError) as exc:
        print(f"nodeflow dev: {exc}", file=sys.stderr)
        return EXIT_USAGE

    stack = DevStack(config)
    previous = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        stack.start()
        problems = stack.apply_files(args.apply) if args.apply else []
        for line in problems:
            log.warning("validation: %s", line)
        if args.until_settled:
            return _headless(stack, args)
        print(banner(stack, config.state_dir), file=sys.stderr if args.output == "json" else sys.stdout, flush=True)
        return _supervise(stack)
    except PortInUseError as exc:
        print(f"nodeflow dev: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ManifestError as exc:
        print(f"nodeflow dev: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as exc:  # a child died or was not ready in time; the message names its log
        print(f"nodeflow dev: {exc}", file=sys.stderr)
        return EXIT_NOT_SETTLED
    except _Stop as exc:
        log.info("received %s; stopping the stack", exc)
        return EXIT_SETTLED if not args.until_settled else EXIT_NOT_SETTLED
    finally:
        # A second Ctrl-C must not cut the clean-up short and leave children behind.
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        stack.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _headless(stack: DevStack, args: argparse.Namespace) -> int:
    summary = stack.wait_settled(args.timeout)
    if args.output == "json":
        print(json.dumps(summary, indent=2), flush=True)
    else:
        print(format_summary(summary), flush=True)
    return EXIT_SETTLED if summary["settled"] else EXIT_NOT_SETTLED


def _supervise(stack: DevStack) -> int:
    """Block until a signal (raised as _Stop) or a child's death."""
    while True:
        dead = stack.dead_children()
        if dead:
            for line in dead:
                log.error("%s", line)
            return EXIT_NOT_SETTLED
        time.sleep(1.0)  # a signal interrupts this at once, through _raise_stop


def banner(stack: DevStack, state_dir: Path) -> str:
    """How to reach every part of the running stack."""
    lines = ["nodeflow dev stack is running (Ctrl-C stops everything)", ""]
    if stack.ui_url:
        lines.append(f"  Temporal UI   {stack.ui_url}")
    lines += [
        f"  Temporal      {stack.temporal_address}",
        f"  Kubernetes    {stack.kube_url}",
        f"  AWS (moto)    {stack.moto_url}",
        *_queue_lines(stack),
        *_metrics_lines(stack),
        f"  logs          {state_dir / 'logs'}/",
        "",
        f"  kubectl --kubeconfig {stack.kubeconfig} get nodes",
        f"  kubectl --kubeconfig {stack.kubeconfig} get nodepools,nodeclaims,pods -A",
        f"  kubectl --kubeconfig {stack.config.worker_kubeconfig} auth can-i --list   # what the worker may do",
        f"  {_shown(Path(sys.executable).parent / 'temporal')} workflow list --address {stack.temporal_address}",
        *_rehearsal_lines(stack, state_dir),
        f"  tail -f {state_dir / 'logs' / 'worker.log'}",
    ]
    return "\n".join(lines)


def _queue_lines(stack: DevStack) -> list[str]:
    """The banner's interruption-queue line; none without a queue."""
    name = stack.config.interruption_queue
    return [f"  interruption  SQS queue {name} (in moto; the worker consumes it)"] if name else []


def _metrics_lines(stack: DevStack) -> list[str]:
    """The banner's metrics lines: each running worker's Karpenter-named and Temporal SDK metrics."""
    lines: list[str] = []
    for name in stack.worker_names():
        lines.append(f"  metrics       {stack.worker_metrics_url(name)} ({name})")
        lines.append(f"  SDK metrics   {stack.worker_temporal_metrics_url(name)} ({name}, Temporal)")
    return lines


def _rehearsal_lines(stack: DevStack, state_dir: Path) -> list[str]:
    """How to rehearse a spot interruption; none without a queue."""
    if not stack.config.interruption_queue:
        return []
    return [f"  {_shown(Path(sys.executable).parent / 'nodeflow')} dev interrupt NODE --state-dir {state_dir}"]


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it is inside it (`.venv/bin/temporal`)."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def format_summary(summary: dict[str, Any]) -> str:
    """A short human-readable rendering of a summary."""
    pods = summary["pods"]
    lines = [
        f"settled: {summary['settled']} after {summary['seconds']:.1f}s",
        f"pods: {pods['bound']}/{pods['total']} bound, {pods['pending']} pending",
    ]
    for claim in summary["nodeClaims"]:
        conditions = ",".join(f"{k}={v}" for k, v in claim["conditions"].items())
        lines.append(f"nodeclaim {claim['name']} {claim['instanceType']} {claim['zone']} {conditions}")
    for instance in summary["instances"]:
        lines.append(f"instance {instance['id']} {instance['type']} {instance['state']} -> {instance['nodeClaim']}")
    queue = summary.get("interruptionQueue")
    if queue is not None:
        lines.append(f"interruption queue {queue['name']}: {queue['messages']} message(s) not yet handled")
    lines += [f"error: {e}" for e in summary["errors"]]
    lines += [f"waiting for: {u}" for u in summary.get("unsettled", [])]
    return "\n".join(lines)


# -- nodeflow dev-interrupt ------------------------------------------------------------------------------


def run_interrupt(args: argparse.Namespace) -> int:
    """Send the warning; 0 when it is on the queue, 2 when the stack, the node or the queue is not found."""
    from devstack.aws import interruption

    try:
        info = json.loads((args.state_dir / "services.json").read_text())
        instance_id = _instance_of(args.state_dir / "kubeconfig", args.node)
        sqs = interruption.sqs_client(str(info["motoUrl"]), str(info["region"]))
        url = interruption.queue_url(sqs, args.queue)
        events = interruption.events_client(str(info["motoUrl"]), str(info["region"]))
    except FileNotFoundError:
        print(
            f"nodeflow dev-interrupt: no local stack runs in {args.state_dir} (start `nodeflow dev`)", file=sys.stderr
        )
        return EXIT_USAGE
    except LookupError as exc:
        print(f"nodeflow dev-interrupt: {exc}", file=sys.stderr)
        return EXIT_USAGE
    interruption.send_interruption(events, instance_id, str(info["region"]), args.kind)
    print(
        f"{args.kind} interruption event for {args.node} ({instance_id}) put on EventBridge; its rule sends it to {url}"
    )
    return EXIT_SETTLED


def _instance_of(kubeconfig: Path, name: str) -> str:
    """The EC2 instance id of Node `name`, else of NodeClaim `name` (from its providerID,
    aws:///<zone>/<instance-id>). Raises LookupError when neither exists or has a providerID."""
    from cloudprovider.types import instance_id_of
    from kube import resources as r
    from kube.client import KubeClient
    from kube.errors import NotFoundError

    if not kubeconfig.exists():
        raise FileNotFoundError(kubeconfig)
    kube = KubeClient.from_kubeconfig(str(kubeconfig))
    try:
        for resource, where in ((r.NODE, ("spec",)), (r.NODECLAIM, ("status",))):
            try:
                obj = kube.get(resource, name)
            except NotFoundError:
                continue
            provider_id = str((obj.get(where[0]) or {}).get("providerID") or "")
            if provider_id:
                return instance_id_of(provider_id)
            raise LookupError(f"{resource.kind} {name} has no providerID yet (its instance is not launched)")
    finally:
        kube.close()
    raise LookupError(f"no Node or NodeClaim named {name!r}")
