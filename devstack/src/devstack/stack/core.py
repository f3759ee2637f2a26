"""`DevStack`: the embedded local stack as one object, for `nodeflow dev` and for tests.

Process layout (every child in its own process group, its output in `<state_dir>/logs/<name>.log`):
- `temporal`: the Temporal dev server (`devstack.temporal`);
- `kube-api`, `moto` and `kubelet`: `python -m devstack.services kube|moto|kubelet`, the Kubernetes API
  emulator, the seeded moto server, and the simulated kubelet with the pod binder (a client of the other
  two), one process each so that they use more than one core and each imports only what it needs;
- `worker`: `config.worker_command` with the stack's endpoints as flags: the product's worker, unchanged;
  more workers on the same stack (replicas) with `start_worker(name)`, each logging to `<name>.log`.

The emulator authenticates every client by a bearer token, random per stack (`devstack.stack.identity`),
and authorizes it with RBAC: `kubeconfig` is the administrator's (group `system:masters`: the user, the
kubelet process, the tests' setup); the worker runs with `worker-kubeconfig`, as the ServiceAccount
`config.worker_service_account` of `config.worker_namespace` under the RBAC rules of `config.rbac_rules`.

`start()` returns once every server answers, with the kubeconfigs written, the CRDs (`config.crds`),
the worker's Namespace, ServiceAccount and RBAC objects and then the defaults applied, and the
interruption queue (`config.interruption_queue`) created in moto.
`stop()` ends every child (SIGTERM, SIGKILL after a grace period); it is idempotent and also runs
at interpreter exit, so a parent that crashes still leaves nothing behind.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

import devstack
from devstack import apply as applying
from devstack import temporal  # a module import: devstack.temporal imports devstack.stack.children
from devstack.aws import interruption
from devstack.aws.access import ADMIN_KEY
from devstack.aws.faults import FaultClient
from devstack.kube.faults import KubeFaultClient
from devstack.services import ec2_client, write_ready_file
from devstack.stack.children import ChildProcess, stop_all
from devstack.stack.config import DevStackConfig
from devstack.stack.identity import Identities, worker_objects
from devstack.stack.ports import check_free, free_port, resolve, wait_for
from devstack.summary import build_summary
from kube.client import KubeClient
from kube.errors import KubeError
from kube.resources import DEPLOYMENT, NODECLAIM, POD, REPLICASET

log = logging.getLogger(__name__)

DEFAULTS_FILE = Path(devstack.__file__).parent / "defaults.yaml"
WORKER_GRACE_SECONDS = 10.0
SERVICES_GRACE_SECONDS = 5.0
KUBE_PORT_ATTEMPTS = 3  # launches of the emulator on a picked port (see DevStack._await_kube)
POLL_INTERVAL = 0.5
# The port flags each worker gets, each a free port of its own: its health probes, its metrics and its
# Temporal SDK metrics.
WORKER_PORTS = ("health-probe-port", "metrics-port", "temporal-metrics-port")


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with Python output unbuffered. Children run on this interpreter
    (`sys.executable`), so they import the same installed distributions as this process."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def _port_of(url: str) -> int:
    port = urlsplit(url).port
    if port is None:
        raise RuntimeError(f"services reported the URL {url!r} without a port")
    return port


class DevStack:
    """See the module docstring. Use as a context manager, or call `start()`/`stop()`.

    After `start()`: `temporal_address`, `temporal_metrics_url` (the dev server's Prometheus endpoint,
    whose `action` counter counts what Temporal Cloud would bill), `ui_url` (None without the UI),
    `kube_url`, `moto_url`, `kubeconfig`, `kube` (a KubeClient for this process) and `ec2` (a boto3 EC2
    client on moto); with an interruption queue, `sqs` and `events` (boto3 SQS and EventBridge clients on moto), and
    `interruption_queue_url` (the queue, fed by EventBridge rules as Karpenter's setup makes them).

    Children get SIGTERM from the kernel when the thread that started them exits (see
    `devstack.stack.children`): call `start()`, `start_worker()` and `restart_temporal()` from a thread
    that lives as long as the stack, normally the main thread."""

    def __init__(self, config: DevStackConfig) -> None:
        self.config = config
        self.kubeconfig: Path = config.kubeconfig
        self.temporal_address = ""
        self.temporal_metrics_url = ""
        self.ui_url: str | None = None
        self.kube_url = ""
        self.moto_url = ""
        self._worker_aws_key = ADMIN_KEY  # the worker's AWS access key (id, secret) until moto reports its own
        self.kube: KubeClient
        self.ec2: Any = None
        self.sqs: Any = None
        self.events: Any = None
        self.interruption_queue_url: str | None = None
        self._temporal: temporal.TemporalDevServer | None = None
        self._services: dict[str, ChildProcess] = {}  # kube-api, moto and kubelet, once started
        self._workers: dict[str, ChildProcess] = {}
        self._expected_workers: set[str] = set()  # started and not stopped or killed through this object
        self._worker_ports: dict[str, dict[str, int]] = {}  # worker -> its WORKER_PORTS, picked at first start
        self._problems: list[str] = []
        self._since = time.monotonic()
        self._kube_client: KubeClient | None = None
        self._identities = Identities.new(config.worker_namespace, config.worker_service_account)

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> DevStack:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start Temporal, the services and (if configured) the worker; apply the CRDs, then the defaults.

        Raises PortInUseError naming the flag when a fixed port is taken, RuntimeError (with the log's
        tail) when a child dies or is not ready within `config.start_timeout`. On any failure what was
        started is stopped again before the exception propagates."""
        cfg = self.config
        cfg.logs_dir.mkdir(parents=True, exist_ok=True)
        atexit.register(self.stop)
        try:
            for port, flag in ((cfg.kube_port, "--kube-port"), (cfg.moto_port, "--moto-port")):
                if port:
                    check_free(port, flag)
            temporal_ports = self._temporal_ports()
            self._launch_servers()  # their imports and seeding take seconds: overlap them with Temporal
            self._start_temporal(temporal_ports)
            self._await_servers()
            self.kube = self._kube_client = KubeClient.from_kubeconfig(str(self.kubeconfig))
            self.ec2 = ec2_client(self.moto_url, cfg.region)
            if cfg.interruption_queue:  # before the worker, whose consumer looks the queue up by name
                self.sqs = interruption.sqs_client(self.moto_url, cfg.region)
                self.interruption_queue_url = interruption.create_queue(self.sqs, cfg.interruption_queue)
                self.events = interruption.events_client(self.moto_url, cfg.region)
                interruption.create_rules(self.events, self.sqs, self.interruption_queue_url, cfg.interruption_queue)
            if cfg.crds:  # first, so that every custom resource applied after it gets its defaults
                self.apply_files(applying.expand_paths(cfg.crds))
            self._apply_worker_identity()  # before the worker: it runs as this ServiceAccount
            if cfg.apply_defaults:
                self.apply_files([DEFAULTS_FILE])
            if cfg.start_worker:
                self.start_worker()
        except BaseException:
            self.stop()
            raise
        self._since = time.monotonic()

    def _temporal_ports(self) -> temporal.TemporalPorts:
        cfg = self.config
        return temporal.TemporalPorts(
            grpc=resolve(cfg.temporal_port, "--temporal-port"),
            ui=resolve(cfg.ui_port, "--ui-port") if cfg.ui else free_port(),
            http=free_port(),
            metrics=free_port(),
        )

    def _start_temporal(self, ports: temporal.TemporalPorts) -> None:
        """Start the server, on new free picks when it exits while starting (see TemporalDevServer)."""
        cfg = self.config
        if cfg.temporal_db is not None:  # a new cluster: no workflow of an earlier run may act on it
            temporal.delete_db(cfg.temporal_db)
        server = temporal.TemporalDevServer(ports, cfg.temporal_db, cfg.ui, cfg.logs_dir / "temporal.log",
                                            cfg.search_attributes)  # fmt: skip
        self._temporal = server
        server.start(cfg.start_timeout, temporal.PORT_ATTEMPTS, self._temporal_ports)
        self.temporal_address = server.address
        self.temporal_metrics_url = f"http://{temporal.HOST}:{server.ports.metrics}/metrics"
        self.ui_url = server.ui_url

    def _launch(self, name: str, role_args: list[str]) -> ChildProcess:
        ready = self._ready_file(name)
        ready.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "devstack.services", *role_args, "--ready-file", str(ready)]
        child = ChildProcess(name, argv, self.config.logs_dir / f"{name}.log", child_env(), SERVICES_GRACE_SECONDS)
        self._services[name] = child
        child.start()
        return child

    def _ready_file(self, name: str) -> Path:
        return self.config.state_dir / "ready" / f"{name}.json"

    def _launch_servers(self) -> None:
        """Launch the Kubernetes API emulator and moto at once: the emulator's port is picked first
        (when 0), so moto's seeded EKS cluster can answer it as its endpoint."""
        cfg = self.config
        cfg.ready_file.unlink(missing_ok=True)
        kube_port = resolve(cfg.kube_port, "--kube-port")
        from devstack.kube import tls
        from devstack.kube.access import write_tokens

        write_tokens(cfg.token_file, self._identities.tokens)
        pki = tls.generate(cfg.pki_dir)
        self._launch("kube-api", ["kube", "--port", str(kube_port), "--token-file", str(cfg.token_file),
                                  "--tls-cert-file", str(pki.cert_file),
                                  "--tls-private-key-file", str(pki.key_file)])  # fmt: skip
        moto = ["moto", "--port", str(cfg.moto_port), "--cluster-name", cfg.cluster_name, "--region", cfg.region,
                "--cluster-endpoint", f"https://127.0.0.1:{kube_port}",
                "--cluster-ca-file", str(pki.ca_file)]  # fmt: skip
        if cfg.response_cache is not None:
            moto += ["--response-cache", str(cfg.response_cache)]
        if cfg.worker_aws_policy is not None:
            cfg.worker_aws_policy_file.write_text(json.dumps(cfg.worker_aws_policy, indent=2))
            moto += ["--worker-policy-file", str(cfg.worker_aws_policy_file)]
        self._launch("moto", moto)

    def _await_ready(self, name: str) -> dict[str, Any]:
        child = self._services[name]
        ready = self._ready_file(name)
        try:
            wait_for(ready.exists, f"{name} (python -m devstack.services)", self.config.start_timeout, child.running)
        except (TimeoutError, RuntimeError) as exc:
            raise RuntimeError(f"{exc}; log {child.log_path}:\n{child.log_tail()}") from exc
        info: dict[str, Any] = json.loads(ready.read_text())
        return info

    def _await_kube(self) -> str:
        """The emulator's URL once it is ready. A port picked for it (`kube_port` 0) can be taken by another
        process before the emulator binds it, which then exits; both servers are then launched again on
        a new pick (moto names the emulator's URL as its EKS endpoint), up to KUBE_PORT_ATTEMPTS times. A
        fixed port, or an emulator still running when the wait fails, is not retried."""
        for attempt in range(1, KUBE_PORT_ATTEMPTS + 1):
            try:
                return str(self._await_ready("kube-api")["url"])
            except RuntimeError as exc:
                if self.config.kube_port or attempt == KUBE_PORT_ATTEMPTS or self._services["kube-api"].running():
                    raise
                log.warning("kube-api exited while starting (attempt %d), launching again: %s", attempt, exc)
                self._services["moto"].stop()
                self._launch_servers()
        raise AssertionError("unreachable")

    def _await_servers(self) -> None:
        """Wait for the emulator and moto, write the kubeconfig and `services.json`, then launch the
        kubelet (not awaited: nothing at start depends on it, and a death shows in `dead_children`)."""
        cfg = self.config
        self.kube_url = self._await_kube()
        moto = self._await_ready("moto")
        self.moto_url = str(moto["url"])
        if "controllerAccessKeyId" in moto:
            self._worker_aws_key = (str(moto["controllerAccessKeyId"]), str(moto["controllerSecretAccessKey"]))
        from devstack.kube.kubeconfig import write_kubeconfig

        write_kubeconfig(self.kubeconfig, self.kube_url, token=self._identities.admin_token, ca_file=cfg.ca_file)
        write_kubeconfig(cfg.worker_kubeconfig, self.kube_url, token=self._identities.worker_token,
                         namespace=cfg.worker_namespace, ca_file=cfg.ca_file)  # fmt: skip
        self._launch("kubelet", ["kubelet", "--kubeconfig", str(self.kubeconfig), "--moto-url", self.moto_url,
                                 "--cluster-name", cfg.cluster_name, "--region", cfg.region,
                                 "--ready-delay", str(cfg.node_ready_delay)])  # fmt: skip
        info = {"kubeUrl": self.kube_url, "motoUrl": self.moto_url, "clusterName": cfg.cluster_name,
                "region": cfg.region, "pids": self.pids()}  # fmt: skip
        write_ready_file(cfg.ready_file, info)

    def _apply_worker_identity(self) -> None:
        """Create the worker's Namespace, ServiceAccount and RBAC objects (`config.rbac_rules`) as the
        administrator; raises RuntimeError when the API server refuses one."""
        cfg = self.config
        docs = worker_objects(cfg.rbac_rules, cfg.worker_namespace, cfg.worker_service_account)
        source = str(cfg.rbac_rules or "the worker's ServiceAccount")
        manifests = [applying.to_manifest(doc, f"{source}#{i}") for i, doc in enumerate(docs)]
        refused = applying.apply_all(self.kube, manifests)
        if refused:
            raise RuntimeError("; ".join(refused))

    def stop(self) -> None:
        """Stop the worker, then the services and Temporal together. Idempotent; never raises for a
        child that already ended."""
        atexit.unregister(self.stop)
        stop_all(list(self._workers.values()), WORKER_GRACE_SECONDS)
        self._expected_workers.clear()
        rest = [*self._services.values(), *([self._temporal.process] if self._temporal else [])]
        stop_all(rest, SERVICES_GRACE_SECONDS)
        self.config.ready_file.unlink(missing_ok=True)
        for name in self._services:
            self._ready_file(name).unlink(missing_ok=True)
        if self._kube_client is not None:
            self._kube_client.close()
            self._kube_client = None

    # -- worker and Temporal, for crash tests --------------------------------------------------------

    def worker_argv(self, name: str = "worker") -> list[str]:
        """The command line of worker `name`: `config.worker_command`, the stack's endpoints, its own
        `--health-probe-port`, `--metrics-port` and `--temporal-metrics-port` (free ports picked at its
        first start, kept across restarts), `--interruption-queue` when the stack has one, then
        `config.worker_args`."""
        cfg = self.config
        if name not in self._worker_ports:
            self._worker_ports[name] = {flag: free_port() for flag in WORKER_PORTS}
        ports = [arg for flag, port in self._worker_ports[name].items() for arg in (f"--{flag}", str(port))]
        return [
            *cfg.worker_command,
            "--temporal-address", self.temporal_address,
            "--kubeconfig", str(self.config.worker_kubeconfig),
            "--aws-endpoint-url", self.moto_url,
            "--region", cfg.region,
            "--cluster-name", cfg.cluster_name,
            *ports,
            *(["--interruption-queue", cfg.interruption_queue] if cfg.interruption_queue else []),
            *cfg.worker_args,
        ]  # fmt: skip

    def start_worker(self, name: str = "worker") -> None:
        """Start worker `name` (again after stop_worker/kill_worker); no-op while it runs. Several names
        run several replicas of the worker on the same stack, as a Deployment's pods would; each gets
        HOSTNAME=`name` in its environment, as a pod gets its pod's name, and POD_NAMESPACE (the
        namespace of its leader-election Lease), as the chart sets it from the downward API."""
        if not name or any(c.isspace() or c == "/" for c in name):
            raise ValueError(f"worker name {name!r} must be non-empty, without spaces or slashes")
        child = self._workers.get(name)
        if child is not None and child.running():
            return
        key_id, secret = self._worker_aws_key  # the controller's with config.worker_aws_policy, else the admin's
        fake_aws = {"AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret,
                    "AWS_DEFAULT_REGION": self.config.region, "HOSTNAME": name}  # fmt: skip
        env = child_env(fake_aws)
        env["POD_NAMESPACE"] = self.config.worker_namespace
        env.pop("AWS_SESSION_TOKEN", None)
        env.pop("AWS_PROFILE", None)
        child = ChildProcess(name, self.worker_argv(name), self.config.logs_dir / f"{name}.log", env,
                             WORKER_GRACE_SECONDS)  # fmt: skip
        self._workers[name] = child
        child.start()
        self._expected_workers.add(name)

    def stop_worker(self, name: str = "worker") -> None:
        """SIGTERM worker `name` (graceful shutdown), SIGKILL after the grace period."""
        if name in self._workers:
            self._expected_workers.discard(name)
            self._workers[name].stop()

    def kill_worker(self, name: str = "worker") -> None:
        """SIGKILL worker `name`, as in a crash: no shutdown code runs."""
        if name in self._workers:
            self._expected_workers.discard(name)
            self._workers[name].stop(kill=True)

    def worker_names(self) -> list[str]:
        """The workers started so far (running or not), in start order."""
        return list(self._workers)

    def worker_probe_url(self, name: str = "worker") -> str:
        """The base URL of worker `name`'s health probes (`/healthz`, `/readyz`)."""
        return self._worker_url(name, "health-probe-port")

    def worker_metrics_url(self, name: str = "worker") -> str:
        """The URL of worker `name`'s Prometheus metrics (`--metrics-port`)."""
        return self._worker_url(name, "metrics-port") + "/metrics"

    def worker_temporal_metrics_url(self, name: str = "worker") -> str:
        """The URL of worker `name`'s Temporal SDK metrics (`--temporal-metrics-port`)."""
        return self._worker_url(name, "temporal-metrics-port") + "/metrics"

    def _worker_url(self, name: str, flag: str) -> str:
        if name not in self._worker_ports:
            raise KeyError(f"worker {name!r} was never started")
        return f"http://127.0.0.1:{self._worker_ports[name][flag]}"

    def restart_temporal(self, kill: bool = False) -> None:
        """Stop Temporal (SIGKILL when `kill`) and start it again on the same ports and db. Without
        `persistent_temporal` the server runs in memory and comes back empty."""
        if self._temporal is None:
            raise RuntimeError("the stack is not started")
        self._temporal.restart(kill=kill, timeout=self.config.start_timeout)

    # -- the interruption queue -----------------------------------------------------------------------

    def send_interruption(self, instance_id: str, kind: str = interruption.SPOT) -> None:
        """Put an EC2 interruption event of `kind` (devstack.aws.interruption.KINDS; a spot interruption
        warning by default) for `instance_id` on EventBridge, whose rules deliver it to the interruption
        queue. Raises RuntimeError when the stack has no interruption queue."""
        self._queue_url()
        interruption.send_interruption(self.events, instance_id, self.config.region, kind)

    def interruption_queue_depth(self) -> int:
        """Messages on the interruption queue, visible or received and not yet deleted. Raises
        RuntimeError when the stack has no interruption queue."""
        return interruption.queue_depth(self.sqs, self._queue_url())

    def _queue_url(self) -> str:
        if self.interruption_queue_url is None:
            raise RuntimeError(
                "the stack has no interruption queue: set DevStackConfig.interruption_queue and start it"
            )
        return self.interruption_queue_url

    # -- fault injection, for durability tests ------------------------------------------------------

    @property
    def kube_faults(self) -> KubeFaultClient:
        """Injects Kubernetes API faults (refused requests, dropped watches) into the running stack."""
        if not self.kube_url:
            raise RuntimeError("the stack is not started: call start() first")
        return KubeFaultClient(self.kube_url, ca_file=self.config.ca_file)

    @property
    def aws_faults(self) -> FaultClient:
        """Injects EC2 faults (insufficient capacity, throttling, 5xx) into the running stack's moto."""
        if not self.moto_url:
            raise RuntimeError("the stack is not started: call start() first")
        return FaultClient(self.moto_url)

    def pids(self) -> dict[str, int]:
        """Pid of every child started so far (it is also its process group id), by name."""
        temporal = [self._temporal.process] if self._temporal else []
        children = [*temporal, *self._services.values(), *self._workers.values()]
        return {c.name: c.pid for c in children if c.pid is not None}

    def dead_children(self) -> list[str]:
        """Children that should run but have exited, as "name (exit N, log PATH)" lines. A worker should
        run from its start_worker() until its stop_worker() or kill_worker()."""
        children = [self._temporal.process if self._temporal else None, *self._services.values()]
        children += [child for name, child in self._workers.items() if name in self._expected_workers]
        return [
            f"{c.name} exited (code {c.exit_code()}); see {c.log_path}"
            for c in children
            if c is not None and c.exit_code() is not None
        ]

    # -- applying and observing ----------------------------------------------------------------------

    def variables(self) -> dict[str, str]:
        return {"CLUSTER_NAME": self.config.cluster_name}

    def apply_text(self, text: str, source: str = "<text>") -> list[str]:
        """Apply a multi-document manifest. Returns the validation problems (the objects are applied
        anyway) and the API server's refusals (those objects are not); raises ManifestError before
        applying anything when the text cannot be applied."""
        manifests, problems = applying.load_text(text, source, self.variables())
        return self._apply(manifests, problems)

    def apply_files(self, paths: list[Path]) -> list[str]:
        """Apply files in order; all are read and checked before any is applied. See apply_text."""
        manifests: list[applying.Manifest] = []
        problems: list[str] = []
        for path in paths:
            more, found = applying.load_file(Path(path), self.variables())
            manifests += more
            problems += found
        return self._apply(manifests, problems)

    def _apply(self, manifests: list[applying.Manifest], problems: list[str]) -> list[str]:
        problems = problems + applying.apply_all(self.kube, manifests)
        self._problems += [p for p in problems if p not in self._problems]
        self._since = time.monotonic()
        return problems

    def summary(self) -> dict[str, Any]:
        """The summary of `devstack.summary.build_summary`; `seconds` counts from the last apply (or
        the start). With an interruption queue, also `interruptionQueue`: {"name", "messages"} (messages
        not yet deleted by the worker; informative, not part of the settled verdict). Failures to read
        the cluster and dead children are reported in `errors`, and make the summary not settled."""
        errors = list(self._problems) + self.dead_children()
        pods: list[dict[str, Any]] = []
        claims: list[dict[str, Any]] = []
        instances: list[dict[str, Any]] = []
        workloads: list[dict[str, Any]] = []
        try:
            workloads = self.kube.list(DEPLOYMENT) + self.kube.list(REPLICASET)
            pods = self.kube.list(POD)
            claims = self.kube.list(NODECLAIM)
            instances = self._instances()
        except (KubeError, BotoCoreError, ClientError) as exc:
            errors.append(f"reading the cluster state failed: {exc}")
        queue: dict[str, Any] | None = None
        try:
            queue = self._queue_summary()
        except (BotoCoreError, ClientError) as exc:
            errors.append(f"reading the interruption queue failed: {exc}")
        summary = build_summary(pods, claims, instances, errors, time.monotonic() - self._since, workloads)
        if queue is not None:
            summary["interruptionQueue"] = queue
        if len(errors) > len(self._problems):
            summary["settled"] = False
            summary["unsettled"].append("the stack is unhealthy (see errors)")
        return summary

    def _queue_summary(self) -> dict[str, Any] | None:
        if self.interruption_queue_url is None:
            return None
        return {"name": self.config.interruption_queue, "messages": self.interruption_queue_depth()}

    def _instances(self) -> list[dict[str, Any]]:
        instances: list[dict[str, Any]] = []
        for page in self.ec2.get_paginator("describe_instances").paginate():
            for reservation in page.get("Reservations", []):
                instances.extend(reservation.get("Instances", []))
        return instances

    def settled(self) -> bool:
        return bool(self.summary()["settled"])

    def wait_settled(self, timeout: float) -> dict[str, Any]:
        """Poll the summary until settled, a child dies, or `timeout` seconds pass; the last summary."""
        deadline = time.monotonic() + timeout
        while True:
            summary = self.summary()
            if summary["settled"] or self.dead_children() or time.monotonic() >= deadline:
                return summary
            time.sleep(min(POLL_INTERVAL, max(deadline - time.monotonic(), 0.0)))


__all__ = ["DevStack", "DevStackConfig"]
