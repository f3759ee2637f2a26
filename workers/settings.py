"""Worker settings: flags override environment variables, which override defaults.

| setting | env | default |
| --- | --- | --- |
| temporal_address | NODEFLOW_TEMPORAL_ADDRESS | 127.0.0.1:7233 |
| temporal_namespace | NODEFLOW_TEMPORAL_NAMESPACE | default |
| temporal_tls | NODEFLOW_TEMPORAL_TLS | off; on when a TLS file or an API key is given |
| temporal_tls_ca_file | NODEFLOW_TEMPORAL_TLS_CA_FILE | none (the system's roots) |
| temporal_tls_cert_file | NODEFLOW_TEMPORAL_TLS_CERT_FILE | none (no client certificate) |
| temporal_tls_key_file | NODEFLOW_TEMPORAL_TLS_KEY_FILE | none (give it with the certificate) |
| temporal_tls_server_name | NODEFLOW_TEMPORAL_TLS_SERVER_NAME | none (the address's host) |
| temporal_api_key | NODEFLOW_TEMPORAL_API_KEY | none (never logged) |
| task_queue | NODEFLOW_TASK_QUEUE | nodeflow |
| kubeconfig | NODEFLOW_KUBECONFIG (then in-cluster config) | none |
| aws_endpoint_url | NODEFLOW_AWS_ENDPOINT_URL | none (real AWS) |
| region | AWS_REGION | us-west-2 |
| cluster_name | NODEFLOW_CLUSTER_NAME | nodeflow-dev |
| cluster_endpoint | NODEFLOW_CLUSTER_ENDPOINT | "" (from eks:DescribeCluster) |
| cluster_ca_bundle | NODEFLOW_CLUSTER_CA_BUNDLE | "" (from eks:DescribeCluster) |
| cluster_service_cidr | NODEFLOW_CLUSTER_SERVICE_CIDR | "" (from eks:DescribeCluster) |
| kubernetes_version | NODEFLOW_KUBERNETES_VERSION | 1.32 |
| registration_ttl | NODEFLOW_REGISTRATION_TTL | 15m |
| batch_idle_duration | NODEFLOW_BATCH_IDLE_DURATION | 1s |
| batch_max_duration | NODEFLOW_BATCH_MAX_DURATION | 10s |
| claim_sweep_interval | NODEFLOW_CLAIM_SWEEP_INTERVAL | 1m |
| garbage_collection_interval | NODEFLOW_GARBAGE_COLLECTION_INTERVAL | 2m |
| garbage_collection_min_age | NODEFLOW_GARBAGE_COLLECTION_MIN_AGE | 2m |
| interruption_queue | NODEFLOW_INTERRUPTION_QUEUE | "" (no interruption handling) |
| instance_status_interval | NODEFLOW_INSTANCE_STATUS_INTERVAL | 1m (Never = no status checks) |
| on_demand_price_refresh_interval | NODEFLOW_ON_DEMAND_PRICE_REFRESH_INTERVAL | 12h (Never = the shipped table only) |
| spot_price_refresh_interval | NODEFLOW_SPOT_PRICE_REFRESH_INTERVAL | 12h (Never = read once) |
| max_cached_workflows | NODEFLOW_MAX_CACHED_WORKFLOWS | 2000 |
| max_concurrent_workflow_tasks | NODEFLOW_MAX_CONCURRENT_WORKFLOW_TASKS | 100 |
| max_concurrent_workflow_task_polls | NODEFLOW_MAX_CONCURRENT_WORKFLOW_TASK_POLLS | 5 |
| nonsticky_to_sticky_poll_ratio | NODEFLOW_NONSTICKY_TO_STICKY_POLL_RATIO | 0.2 |
| disruption_methods | NODEFLOW_DISRUPTION_METHODS | all five methods, in order (below) |
| feature_gates | NODEFLOW_FEATURE_GATES | Karpenter's defaults (workers.feature_gates) |
| vm_memory_overhead_percent | NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT | 0.075 |
| reserved_enis | NODEFLOW_RESERVED_ENIS | 0 |
| preference_policy | NODEFLOW_PREFERENCE_POLICY | Respect |
| min_values_policy | NODEFLOW_MIN_VALUES_POLICY | Strict |
| disable_dry_run | NODEFLOW_DISABLE_DRY_RUN | false |
| health_probe_port | NODEFLOW_HEALTH_PROBE_PORT | 8081 (0 = no probe server) |
| metrics_port | NODEFLOW_METRICS_PORT | 8080 (0 = no metrics endpoint) |
| temporal_metrics_port | NODEFLOW_TEMPORAL_METRICS_PORT | 8082 (0 = no Temporal SDK metrics endpoint) |
| leader_election_name | NODEFLOW_LEADER_ELECTION_NAME | nodeflow-leader-election |
| leader_election_namespace | NODEFLOW_LEADER_ELECTION_NAMESPACE | "" (POD_NAMESPACE, else kube-system) |
| leader_election_lease_duration | NODEFLOW_LEADER_ELECTION_LEASE_DURATION | 15s |
| leader_election_renew_deadline | NODEFLOW_LEADER_ELECTION_RENEW_DEADLINE | 10s |
| leader_election_retry_period | NODEFLOW_LEADER_ELECTION_RETRY_PERIOD | 2s |

`cluster_endpoint`, `cluster_ca_bundle` (base64 PEM, Karpenter's `clusterCABundle`) and
`cluster_service_cidr` go into the nodes' user data; the worker reads the ones not given from
`eks:DescribeCluster` once at start (cloudprovider.aws.cluster), and does not start without it.

`disruption_methods`: the disruption methods whose commands the controller executes (comma-separated,
from Emptiness,Drift,MultiNodeConsolidation,SingleNodeConsolidation,SplitConsolidation;
"" = none). The others are still decided and recorded in the controller's history, so `nodeflow explain`
and the Temporal UI show what they would do. The last worker to start sets them. SplitConsolidation
is nodeflow's own (one underused node replaced by several smaller ones costing at least 25% less);
leave it out for exactly Karpenter's behaviour.

`batch_idle_duration`, `batch_max_duration`: Karpenter's batching of pending pods into one provisioning
round: a round starts once no new pending pod has been seen for the idle duration, or the max duration
after the first one (Karpenter's BATCH_IDLE_DURATION and BATCH_MAX_DURATION, same defaults). Every
worker sends its window with the rounds it asks for, so the provisioner follows the last one asked.

`claim_sweep_interval`: how often the leader looks at every NodeClaim (activities.nodeclaim.sweep) to expire the
ones past their expireAfter and to ask the ones whose drift changed without any spec change (an AMI
released behind an `@latest` alias) to check it; each look reads the NodeClaims, NodePools and
EC2NodeClasses from the leader's watch cache. An expiry is acted on, at most, this long late.

The garbage collector terminates the cluster's instances whose NodeClaim is gone and which launched at
least `garbage_collection_min_age` ago; the leader looks for them every `garbage_collection_interval`
(activities.garbage_collection.survey) and asks the collector for a round only when it finds some. The last worker to
start sets both for the one collector of the namespace.

`interruption_queue`: the name of the SQS queue EventBridge fills with EC2 interruption events
(conventionally the cluster's name, as Karpenter's `--interruption-queue`); the leader consumes it
(activities.interruption.consumer): a spot interruption warning, an AWS Health scheduled change or an instance
stopping or terminating disrupts the instance's NodeClaim at once. Empty: off.

Prices (activities.provisioning.price_refresh): every worker reads on-demand prices from the AWS Pricing API
(`pricing:GetProducts`) at start and every `on_demand_price_refresh_interval`, and spot prices
(DescribeSpotPriceHistory, per zone) every `spot_price_refresh_interval`; both 12h, as Karpenter's pricing
controller. Until the Pricing API answers (or when it cannot: no permission, no route, throttled) the
on-demand prices are the table nodeflow ships for the region, us-east-1's for a region without one
(`nodeflow prices refresh` writes one). Never for on-demand: never call the Pricing API (an isolated
VPC, Karpenter's `isolatedVPC`); for spot: the prices read at start stay. At least 1m.

`instance_status_interval`: how often the leader reads EC2's status checks and scheduled events of the
cluster's running instances (DescribeInstanceStatus; activities.interruption.instance_status). An instance whose
instance or system status check is impaired, or which has a scheduled event (retirement, maintenance,
stop, reboot), is treated as an AWS Health scheduled change: its NodeClaim is disrupted. It needs no
queue. At least 10s; Never: off.

Worker tuning: `max_cached_workflows` bounds the workflows kept in the worker's memory (about 60 KiB
each), least recently used out first. It need not cover the fleet: a Running NodeClaim waits for a signal
and holds no timer, so an idle one is evicted first, and its next signal replays its Running run, a
handful of events (about 9 ms of worker CPU; benchmarks/bounded_cache.py). Keep it above the claims
that launch or drain at once, which replay longer histories at every step when evicted.
`max_concurrent_workflow_tasks` bounds workflow tasks processed at once. Of the
`max_concurrent_workflow_task_polls` long polls, the share `nonsticky_to_sticky_poll_ratio` (at least
one) takes workflow tasks of workflows not in this worker's cache, such as newly started NodeClaims:
with the SDK's defaults (5, 0.2) that is one poll, about 6 new workflows a second on the dev server.

`feature_gates`: Karpenter's `--feature-gates` value as is (`SpotToSpotConsolidation=true,NodeRepair=false`);
an unknown gate or a value other than true/false is refused. Of Karpenter's gates, nodeflow acts on
`SpotToSpotConsolidation` and `NodeRepair` (activities.interruption.repair); the worker logs a warning at start for
any other one turned on.

Instance types (cloudprovider.aws.instancetypes), as Karpenter's `--vm-memory-overhead-percent` and
`--reserved-enis`: `vm_memory_overhead_percent` is the share of each instance type's memory taken to be
the hypervisor's, left out of its memory capacity (0.075, from 0 up to 1); `reserved_enis` is the number of
each instance's network interfaces kept for something other than pods (a CNI's own, another
controller's), left out of the ENI-limited pod count (ENIs x (IPv4 per ENI - 1) + 2) when the node
class's kubelet sets no maxPods. Both change what a pod is planned to fit on, so they must match the
nodes: memory planned that the kubelet will not report leaves pods pending on a node launched for them.

`preference_policy`: Karpenter's `--preference-policy`. Respect: provisioning and consolidation first
treat each pod's preferences (preferred node affinity, preferred pod affinity and anti-affinity,
ScheduleAnyway topology spreads) as required, and relax them one at a time when the pod fits nowhere.
Ignore: they are dropped up front, so a round is planned in one pass with fewer constraints, and nodes
are not launched to honour a preference.

`min_values_policy`: Karpenter's `--min-values-policy`. Strict: a pod whose new node's instance types
cannot meet a NodePool requirement's `minValues` stays pending, with a reason naming it. BestEffort: the
node is launched with that `minValues` lowered to what its instance types offer, and its NodeClaim is
annotated `karpenter.sh/nodeclaim-min-values-relaxed: "true"` (every other NodeClaim: "false"; also the
`min_values_relaxed` label of `karpenter_nodeclaims_created_total`).

`disable_dry_run`: Karpenter's `--disable-dry-run`. By default each EC2NodeClass's launch calls are tried
with DryRun once it resolves (CreateFleet, CreateLaunchTemplate, RunInstances), so a controller policy
that forbids them makes the class not ready (`ValidationSucceeded=False`) before a node fails to launch
(cloudprovider.aws.authorization). True: no such call; the condition is True.

Temporal connection: `temporal_tls` takes true/false (the flag alone, `--temporal-tls`, means true).
TLS is on when it is true or when any `temporal_tls_*_file` or `temporal_api_key` is given; false
with a TLS file is refused, false with an API key sends the key in plain text (a local proxy). The
certificate and key files are PEM and come together (mutual TLS); the CA file is PEM and replaces the
system's roots. `temporal_api_key` (Temporal Cloud) is sent as a bearer token and never appears in
logs or in the settings' repr. workers.temporal.client checks the files, the server and the namespace
before anything runs, and fails in one line naming the setting.

Replicas: every worker polls the task queue; only the holder of the `coordination.k8s.io/v1` Lease
`leader_election_name` in `leader_election_namespace` runs the watchers and the start-up work
(workers.worker), so "the last worker to start" above is the last one to become the leader. An empty
namespace means the worker's own (the POD_NAMESPACE environment variable, set from the downward API),
else kube-system. The three `leader_election_*` durations are client-go's (and kube-controller-manager's
`--leader-elect-lease-duration`, `--leader-elect-renew-deadline`, `--leader-elect-retry-period`, with the
same defaults): a crashed leader is replaced within the lease duration, the leader stops its work when
it has not renewed within the renew deadline, and candidates try every retry period; they must keep
lease duration > renew deadline > 1.2 x retry period. Shorter values fail over sooner and write the
Lease more often. `health_probe_port` serves /healthz and /readyz (workers.health) on all interfaces;
0 turns the server off.

Metrics (workers.metrics_server): `metrics_port` serves `/metrics` on all interfaces, with Karpenter's
metric names (activities.metrics.registry), on Karpenter's default port; `temporal_metrics_port` serves the
Temporal SDK's own metrics (`temporal_*`) at `/metrics` on a second port. 0 turns either off.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, fields
from dataclasses import field as dataclass_field
from typing import get_args

from apis.duration import parse_duration
from cloudprovider.aws.instancetypes import DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
from scheduling.disruption.model import METHOD_ORDER
from scheduling.types import MinValuesPolicy, PreferencePolicy, SchedulingPolicies
from workers.feature_gates import parse_feature_gates
from workers.leader_election import JITTER_FACTOR, Timing

# The disruption methods, in the order the controller tries them (scheduling.disruption.decide).
DISRUPTION_METHODS: tuple[str, ...] = METHOD_ORDER


@dataclass(frozen=True)
class Settings:
    temporal_address: str = "127.0.0.1:7233"
    temporal_namespace: str = "default"
    task_queue: str = "nodeflow"
    kubeconfig: str | None = None
    aws_endpoint_url: str | None = None
    region: str = "us-west-2"
    cluster_name: str = "nodeflow-dev"
    cluster_endpoint: str = ""
    cluster_ca_bundle: str = ""
    cluster_service_cidr: str = ""
    kubernetes_version: str = "1.32"
    registration_ttl: str = "15m"
    batch_idle_duration: str = "1s"
    batch_max_duration: str = "10s"
    claim_sweep_interval: str = "1m"
    garbage_collection_interval: str = "2m"
    garbage_collection_min_age: str = "2m"
    interruption_queue: str = ""
    instance_status_interval: str = "1m"
    on_demand_price_refresh_interval: str = "12h"
    spot_price_refresh_interval: str = "12h"
    max_cached_workflows: int = 2000
    max_concurrent_workflow_tasks: int = 100
    max_concurrent_workflow_task_polls: int = 5
    nonsticky_to_sticky_poll_ratio: float = 0.2
    disruption_methods: str = ",".join(DISRUPTION_METHODS)
    feature_gates: str = ""
    # Karpenter's --vm-memory-overhead-percent and --reserved-enis: the share of an instance type's memory
    # the hypervisor keeps, and the ENIs per instance left out of the pod (IP) limit.
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
    reserved_enis: int = 0
    preference_policy: PreferencePolicy = "Respect"
    min_values_policy: MinValuesPolicy = "Strict"
    disable_dry_run: bool = False
    temporal_tls: bool | None = None  # None: on exactly when a TLS file or an API key is given
    temporal_tls_ca_file: str | None = None
    temporal_tls_cert_file: str | None = None
    temporal_tls_key_file: str | None = None
    temporal_tls_server_name: str | None = None
    temporal_api_key: str | None = dataclass_field(default=None, repr=False)
    health_probe_port: int = 8081
    metrics_port: int = 8080
    temporal_metrics_port: int = 8082
    leader_election_name: str = "nodeflow-leader-election"
    leader_election_namespace: str = ""
    leader_election_lease_duration: str = "15s"
    leader_election_renew_deadline: str = "10s"
    leader_election_retry_period: str = "2s"

    def __post_init__(self) -> None:
        _check_temporal_tls(self)
        for field in fields(self):
            if field.name in PORTS:
                object.__setattr__(self, field.name, _port(field.name, getattr(self, field.name)))
            elif field.name in BOUNDED:
                object.__setattr__(self, field.name, _bounded_number(field.name, getattr(self, field.name)))
            elif field.type in ("int", int):
                object.__setattr__(self, field.name, int(_positive_number(field.name, getattr(self, field.name), int)))
            elif field.type in ("float", float):
                object.__setattr__(self, field.name, _positive_number(field.name, getattr(self, field.name), float))
        for name in DURATIONS:
            _check_duration(name, getattr(self, name))
        unknown = [m for m in self.disruption_method_list() if m not in DISRUPTION_METHODS]
        if unknown:
            raise ValueError(
                f"{where('disruption_methods')}: unknown {', '.join(unknown)}; give a comma-separated subset of "
                f"{','.join(DISRUPTION_METHODS)}"
            )
        self.feature_gate_values()  # refuses a malformed value now, not when the leader starts
        object.__setattr__(self, "disable_dry_run", _flag("disable_dry_run", self.disable_dry_run))
        for name, allowed in POLICIES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{where(name)} is {getattr(self, name)!r}: give one of {', '.join(allowed)} (Karpenter's "
                    f"--{name.replace('_', '-')})"
                )
        self.batch_window()
        self.leader_election_timing()
        if self.nonsticky_to_sticky_poll_ratio > 1:
            raise ValueError(
                f"{where('nonsticky_to_sticky_poll_ratio')} is {self.nonsticky_to_sticky_poll_ratio}: give a share "
                "between 0 and 1"
            )

    def scheduling_policies(self) -> SchedulingPolicies:
        return SchedulingPolicies(self.preference_policy, self.min_values_policy)

    def temporal_tls_enabled(self) -> bool:
        """Whether the Temporal connection uses TLS: as set, else on when a TLS file or an API key is given."""
        if self.temporal_tls is not None:
            return bool(self.temporal_tls)
        return bool(self.temporal_api_key) or any(getattr(self, name) for name in TEMPORAL_TLS_FILES)

    def lease_namespace(self, env: dict[str, str] | None = None) -> str:
        """The namespace of the leader-election Lease: the setting, else POD_NAMESPACE, else kube-system."""
        env = dict(os.environ if env is None else env)
        return self.leader_election_namespace or env.get("POD_NAMESPACE") or "kube-system"

    def feature_gate_values(self) -> dict[str, bool]:
        """Every feature gate's value (workers.feature_gates): the setting over Karpenter's defaults."""
        return parse_feature_gates(self.feature_gates, where("feature_gates"))

    def leader_election_timing(self) -> Timing:
        """The three `leader_election_*` durations as a Timing; a ValueError naming the settings when
        they are not lease duration > renew deadline > 1.2 x retry period."""
        lease, renew, retry = (self.exact_seconds(name) for name in LEADER_ELECTION_DURATIONS)
        try:
            return Timing(lease_duration=lease, renew_deadline=renew, retry_period=retry)
        except ValueError:
            names = ", ".join(f"{where(n)} {getattr(self, n)!r}" for n in LEADER_ELECTION_DURATIONS)
            raise ValueError(
                f"{names}: give a lease duration longer than the renew deadline, and a renew deadline longer than "
                f"{JITTER_FACTOR} x the retry period (client-go's defaults are 15s, 10s, 2s)"
            ) from None

    def batch_window(self) -> tuple[float, float]:
        """(idle, max) seconds of the provisioning batch window; a ValueError naming both settings when
        the idle duration is zero or longer than the max."""
        idle, longest = (self.exact_seconds(name) for name in BATCH_DURATIONS)
        if not 0 < idle <= longest:
            names = ", ".join(f"{where(n)} {getattr(self, n)!r}" for n in BATCH_DURATIONS)
            raise ValueError(
                f"{names}: give an idle duration above 0s and no longer than the max (Karpenter's: 1s, 10s)"
            )
        return idle, longest

    def disruption_method_list(self) -> list[str]:
        return [m.strip() for m in self.disruption_methods.split(",") if m.strip()]

    def seconds(self, name: str) -> int:
        """A finite duration setting (FINITE_DURATIONS) in whole seconds."""
        return int(self.exact_seconds(name))

    def exact_seconds(self, name: str) -> float:
        """A finite duration setting (FINITE_DURATIONS) in seconds, fractions kept."""
        parsed = parse_duration(getattr(self, name))
        assert parsed is not None, name  # __post_init__ refused Never
        return parsed.total_seconds()

    def optional_seconds(self, name: str) -> int | None:
        """A duration setting of DURATIONS in whole seconds; None for Never."""
        parsed = parse_duration(getattr(self, name))
        return None if parsed is None else int(parsed.total_seconds())

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        values: dict[str, str] = {}
        for field in fields(cls):
            name = _ENV.get(field.name, f"NODEFLOW_{field.name.upper()}")
            if name in env and env[name] != "":
                values[field.name] = env[name]
        return cls(**values)  # type: ignore[arg-type]

    def with_args(self, args: argparse.Namespace) -> Settings:
        overrides = {f.name: getattr(args, f.name) for f in fields(self) if getattr(args, f.name, None) is not None}
        return Settings(**{**self.__dict__, **overrides})


_ENV = {"region": "AWS_REGION"}
BATCH_DURATIONS = ("batch_idle_duration", "batch_max_duration")
LEADER_ELECTION_DURATIONS = (
    "leader_election_lease_duration",
    "leader_election_renew_deadline",
    "leader_election_retry_period",
)
DURATIONS = (
    "registration_ttl",
    "batch_idle_duration",
    "batch_max_duration",
    "claim_sweep_interval",
    "garbage_collection_interval",
    "garbage_collection_min_age",
    "instance_status_interval",
    "on_demand_price_refresh_interval",
    "spot_price_refresh_interval",
    *LEADER_ELECTION_DURATIONS,
)
FINITE_DURATIONS = (
    "batch_idle_duration",
    "batch_max_duration",
    "claim_sweep_interval",
    "garbage_collection_interval",
    "garbage_collection_min_age",
    *LEADER_ELECTION_DURATIONS,
)
TEMPORAL_TLS_FILES = ("temporal_tls_ca_file", "temporal_tls_cert_file", "temporal_tls_key_file")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def where(name: str) -> str:
    """A setting as the user can give it: `name (flag --name, env NODEFLOW_NAME)`."""
    return f"{name} (flag --{name.replace('_', '-')}, env {_ENV.get(name, f'NODEFLOW_{name.upper()}')})"


# Duration settings with a lower bound: name -> (seconds, what to tell the user).
MINIMUM_DURATIONS = {
    "claim_sweep_interval": (1, "give at least 1s"),
    "garbage_collection_interval": (1, "give at least 1s"),
    "instance_status_interval": (10, "give at least 10s, or Never to turn the checks off"),
    "on_demand_price_refresh_interval": (60, "give at least 1m (Karpenter's is 12h), or Never"),
    "spot_price_refresh_interval": (60, "give at least 1m (Karpenter's is 12h), or Never"),
    "leader_election_lease_duration": (1, "give at least 1s (client-go's is 15s)"),
}


def _check_duration(name: str, value: str) -> None:
    """A ValueError naming the setting for a malformed duration, Never where it is not allowed, or one
    below its minimum."""
    try:
        parsed = parse_duration(value)
    except ValueError as err:
        raise ValueError(f"{where(name)}: {err}") from None
    if name in FINITE_DURATIONS and parsed is None:
        raise ValueError(f"{where(name)} is {value!r}: give a duration such as 2m (Never is not allowed here)")
    minimum, advice = MINIMUM_DURATIONS.get(name, (0, ""))
    if parsed is not None and parsed.total_seconds() < minimum:
        raise ValueError(f"{where(name)} is {value!r}: {advice}")


def _check_temporal_tls(settings: Settings) -> None:
    """Parse `temporal_tls` (a bool, or true/false text from a flag or the environment) in place; a
    ValueError naming the setting for other text, for false with a TLS file, and for a certificate
    without its key or a key without its certificate. The files themselves are read when connecting."""
    if isinstance(settings.temporal_tls, str):
        object.__setattr__(settings, "temporal_tls", _flag("temporal_tls", settings.temporal_tls))
    given = [name for name in TEMPORAL_TLS_FILES if getattr(settings, name)]
    if settings.temporal_tls is False and given:
        raise ValueError(f"{where('temporal_tls')} is false but {where(given[0])} is set: drop one of them")
    cert, key = settings.temporal_tls_cert_file, settings.temporal_tls_key_file
    if bool(cert) != bool(key):
        missing = "temporal_tls_key_file" if cert else "temporal_tls_cert_file"
        raise ValueError(f"{where(missing)} is not set: a client certificate and its key come together")


PORTS = ("health_probe_port", "metrics_port", "temporal_metrics_port")  # 0 allowed: the server is off
POLICIES = {"preference_policy": get_args(PreferencePolicy), "min_values_policy": get_args(MinValuesPolicy)}
# Numbers that may be 0: name -> (kind, upper bound excluded or None, what to tell the user).
BOUNDED: dict[str, tuple[type[int] | type[float], float | None, str]] = {
    "vm_memory_overhead_percent": (float, 1.0, "give a fraction from 0 up to 1, such as 0.075 (Karpenter's default)"),
    "reserved_enis": (int, None, "give a whole number of ENIs, 0 or more"),
}


def _flag(name: str, value: object) -> bool:
    """`value` (a bool, or true/false text from a flag or the environment) as a bool; a ValueError naming
    the setting for other text."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in _TRUE + _FALSE:
        raise ValueError(f"{where(name)} is {value!r}: give true or false")
    return text in _TRUE


def _bounded_number(name: str, value: object) -> float:
    """`value` as the kind BOUNDED gives for `name`, at least 0 and below its bound; a ValueError naming
    the setting otherwise."""
    kind, bound, advice = BOUNDED[name]
    try:
        number: float = kind(str(value).strip())
    except ValueError:
        raise ValueError(f"{where(name)} is {value!r}: {advice}") from None
    if number < 0 or (bound is not None and number >= bound):
        raise ValueError(f"{where(name)} is {value!r}: {advice}")
    return number


def _positive_number(name: str, value: object, kind: type[int] | type[float]) -> float:
    """`value` (a number, or a string from the environment or a flag) as a positive `kind`; a
    ValueError naming the setting, its flag and its environment variable otherwise."""
    try:
        number: float = kind(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        wanted = "a positive whole number" if kind is int else "a positive number"
        raise ValueError(f"{where(name)} is {value!r}: give {wanted}")
    return number


def _port(name: str, value: object) -> int:
    """`value` as a TCP port number (0-65535); a ValueError naming the setting otherwise."""
    try:
        port = int(str(value).strip())
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        flag, env = f"--{name.replace('_', '-')}", f"NODEFLOW_{name.upper()}"
        raise ValueError(f"{name} (flag {flag}, env {env}) is {value!r}: give a port 1-65535, or 0 for none")
    return port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for every setting (`--temporal-address`, `--cluster-name`, ...); unset flags keep env/defaults."""
    for field in fields(Settings):
        if field.name in ("temporal_tls", "disable_dry_run"):  # the flag alone means true; `false` also works
            flag = f"--{field.name.replace('_', '-')}"
            parser.add_argument(flag, dest=field.name, default=None, nargs="?", const="true")
            continue
        parser.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name, default=None)
