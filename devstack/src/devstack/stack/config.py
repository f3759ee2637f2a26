"""What a dev stack is started with."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack.aws.response_cache import default_cache_dir

DEFAULT_TEMPORAL_PORT = 7233
DEFAULT_UI_PORT = 8233
DEFAULT_KUBE_PORT = 6443
DEFAULT_MOTO_PORT = 5000
DEFAULT_CLUSTER_NAME = "nodeflow-dev"
DEFAULT_STATE_DIR = Path(".nodeflow")
DEFAULT_REGION = "us-west-2"
# Where a Helm release of the chart would put the worker: its namespace and ServiceAccount.
DEFAULT_WORKER_NAMESPACE = "nodeflow"
DEFAULT_WORKER_SERVICE_ACCOUNT = "nodeflow"


@dataclass
class DevStackConfig:
    """Settings of one `DevStack`. Ports 0 mean "pick a free port" (the defaults here, for tests; the
    `nodeflow dev` command passes the well-known ports).

    state_dir: holds `kubeconfig` (the administrator's, group `system:masters`), `worker-kubeconfig` (the
      worker's ServiceAccount's), `kube-tokens.json` (the emulator's token table), `pki/` (its CA and
      serving certificate), `temporal.db` (when `persistent_temporal`), `services.json` and
      `logs/<child>.log`.
    ui: serve the Temporal UI on `ui_port`.
    persistent_temporal: keep Temporal's state in `<state_dir>/temporal.db` while the stack runs, so
      `restart_temporal()` keeps the workflows. Every start deletes that db first: the Kubernetes
      emulator and moto start empty, and workflows of an earlier run must never meet a new cluster.
    search_attributes: (name, type) of the custom search attributes Temporal registers at start (see
      `devstack.temporal.TemporalDevServer`). The product's composition root passes its own.
    start_worker: run the worker as a child: `worker_command` (required then) followed by
      `--temporal-address`, `--kubeconfig`, `--aws-endpoint-url`, `--region` and `--cluster-name` (each
      with its value: the stack's endpoints), `--health-probe-port`, `--metrics-port` and
      `--temporal-metrics-port` (free ports per worker, see `DevStack.worker_probe_url`,
      `worker_metrics_url` and `worker_temporal_metrics_url`), then `worker_args`; the cluster's
      endpoint, CA and service CIDR come from the seeded EKS cluster (DescribeCluster). The worker
      runs with the AWS keys `worker_aws_policy` gives it, HOSTNAME=<its name> and
      POD_NAMESPACE=`worker_namespace` in its environment, and `--kubeconfig` is `worker-kubeconfig`: it
      authenticates as the ServiceAccount `worker_service_account` of `worker_namespace`, which the
      emulator authorizes with RBAC. The product's composition root passes its worker command; the dev
      stack does not know the product.
    crds: manifests of `CustomResourceDefinition`s (files, or directories whose `*.yaml`, `*.yml` and
      `*.json` files are taken in name order) applied at start before anything else, as
      `kubectl apply -f deploy/crds/` would be on a real cluster: the emulator then applies their
      schemas' structural defaults to custom resources. The product's composition root passes its
      own CRDs; without them custom resources are stored as given.
    rbac_rules: the product's RBAC rules file (`clusterRules:` and `leaseRules:`, see
      `devstack.stack.identity`): at start, before the worker, the stack creates the worker's Namespace
      and ServiceAccount and, from this file, the ClusterRole, Role and their bindings a Helm release
      would make. None grants the ServiceAccount nothing beyond discovery. The product's composition
      root passes its chart's file.
    worker_namespace, worker_service_account: the worker's namespace (its Lease's) and ServiceAccount.
    worker_aws_policy: the IAM policy document of the worker's AWS principal. moto enforces it by action
      (`devstack.aws.access`): the worker signs with the keys of IAM user `nodeflow-controller`, whose only
      policy is the projection of this one (its actions on any resource, without conditions), and a call
      it does not grant is refused; the stack's own clients, the kubelet and the tests keep the admin
      keys "testing"/"testing". None: the worker gets the admin keys and moto checks nothing. The
      product's composition root passes its controller policy for the stack's account (moto's
      123456789012), region and cluster.
    apply_defaults: apply `devstack/defaults.yaml` (NodePool and EC2NodeClass `default`) at start.
    interruption_queue: the name of an SQS queue that `start()` creates in moto before the worker starts,
      and that the worker is given as `--interruption-queue` (after `--health-probe-port`, before
      `worker_args`); "" (the default) creates no queue and passes no flag. Karpenter's getting-started
      names it after the cluster (see `devstack.aws.interruption`).
    response_cache: where moto keeps its unchanging answers across stacks (DescribeInstanceTypes, 2 s of
      CPU each time; see `devstack.aws.response_cache`); None to serialise them every time.
    node_ready_delay: seconds the simulated kubelet waits from first seeing a Node until it turns it Ready
      (a real EC2 node takes tens of seconds from joining to Ready; 1 s keeps the local stack quick).
    """

    state_dir: Path = DEFAULT_STATE_DIR
    temporal_port: int = 0
    ui_port: int = 0
    kube_port: int = 0
    moto_port: int = 0
    cluster_name: str = DEFAULT_CLUSTER_NAME
    ui: bool = False
    persistent_temporal: bool = True
    search_attributes: list[tuple[str, str]] = field(default_factory=list)
    start_worker: bool = True
    worker_command: list[str] = field(default_factory=list)
    worker_args: list[str] = field(default_factory=list)
    crds: list[Path] = field(default_factory=list)
    apply_defaults: bool = True
    rbac_rules: Path | None = None
    worker_namespace: str = DEFAULT_WORKER_NAMESPACE
    worker_service_account: str = DEFAULT_WORKER_SERVICE_ACCOUNT
    worker_aws_policy: dict[str, Any] | None = None
    region: str = DEFAULT_REGION
    interruption_queue: str = ""
    response_cache: Path | None = field(default_factory=default_cache_dir)
    start_timeout: float = 60.0
    node_ready_delay: float = 1.0

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir)
        self.crds = [Path(p) for p in self.crds]
        self.rbac_rules = Path(self.rbac_rules) if self.rbac_rules is not None else None
        if not self.cluster_name or any(c.isspace() for c in self.cluster_name):
            raise ValueError(f"cluster_name {self.cluster_name!r} must be a non-empty name without spaces")
        if any(c.isspace() for c in self.interruption_queue):
            raise ValueError(f"interruption_queue {self.interruption_queue!r} must be a queue name without spaces")
        if self.node_ready_delay < 0:
            raise ValueError(f"node_ready_delay {self.node_ready_delay} must be 0 or more seconds")
        if self.start_worker and not self.worker_command:
            raise ValueError("start_worker needs worker_command (the command line that runs the worker)")

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def worker_kubeconfig(self) -> Path:
        return self.state_dir / "worker-kubeconfig"

    @property
    def token_file(self) -> Path:
        return self.state_dir / "kube-tokens.json"

    @property
    def pki_dir(self) -> Path:
        """The emulator's CA and serving certificate (`devstack.kube.tls`): it serves HTTPS."""
        return self.state_dir / "pki"

    @property
    def ca_file(self) -> Path:
        return self.pki_dir / "ca.crt"

    @property
    def worker_aws_policy_file(self) -> Path:
        """Where the stack writes `worker_aws_policy` for the moto service."""
        return self.state_dir / "worker-aws-policy.json"

    @property
    def temporal_db(self) -> Path | None:
        return self.state_dir / "temporal.db" if self.persistent_temporal else None

    @property
    def ready_file(self) -> Path:
        return self.state_dir / "services.json"
