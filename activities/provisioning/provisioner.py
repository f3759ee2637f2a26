"""Provisioning activities: read the cluster fresh and plan (`solve`), then make the plan real
(`apply_plan`: NodeClaim CRs with deterministic names, one NodeClaim workflow each, NodePool status and
pod events). The plan is recorded in the provisioner's history, so the Temporal UI shows why each node
was launched, and changing the solver never breaks replay."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Generic, TypeVar

from pydantic import ValidationError
from temporalio import activity

import scheduling
from activities import nodepool_status
from activities.heartbeat import heartbeating
from activities.metrics.registry import PROVISIONED, Metrics
from activities.provisioning.claim_creation import ClaimLauncher, WorkflowStarter
from activities.provisioning.models import ApplyPlanInput, ApplyPlanResult, ProvisionPlan, ProvisionRound
from activities.provisioning.status import ProvisioningStatus
from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType, Offering
from apis.labels import CAPACITY_TYPE_RESERVED
from apis.nodeclaim import NodeClaim
from apis.nodepool import is_managed
from cloudprovider.types import CloudProvider
from kube import ops as kubeops
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.provisioning.catalog import OptionCache
from scheduling.provisioning.pods import INVALID_POD
from scheduling.provisioning.provisionable import is_bound, is_provisionable, pod_key
from scheduling.provisioning.volumes import VOLUMES_NOT_READY, VolumeReadiness
from scheduling.types import ExistingNodePlacement, Plan, SchedulingInput, SchedulingPolicies, UnschedulablePod

log = logging.getLogger(__name__)


PROVISIONER = "provisioner"  # the `controller` label of the scheduling metrics
IGNORED = (INVALID_POD, VOLUMES_NOT_READY)  # reasons of the pods Karpenter's ignored-pods gauge counts
POD_EVENTS_PER_ROUND = 200  # FailedScheduling and Nominated Events a round records, each
NOMINATION_DEDUPE = timedelta(minutes=2)  # a pod nominated again within this: no Event
NO_COMPATIBLE_TYPES = "NodePool requirements filtered out all compatible available instance types"  # Karpenter's


MadeFrom = TypeVar("MadeFrom")


class CatalogCopies(Generic[MadeFrom]):
    """Changed copies of catalog types, one per type name, each kept while the catalog hands out the same
    type object and what the copy was made from compares equal. The solver's option cache
    (scheduling.provisioning.catalog.OptionCache) knows types by object, so a type copied anew each solve would have its
    options built anew each solve. Thread-safe (entries are set whole)."""

    def __init__(self, make: Callable[[InstanceType, MadeFrom], InstanceType]) -> None:
        self._make = make
        self._copies: dict[str, tuple[InstanceType, MadeFrom, InstanceType]] = {}  # name -> (from, made_from, copy)

    def of(self, it: InstanceType, made_from: MadeFrom) -> InstanceType:
        """`make(it, made_from)`: the copy kept, if it was made from both."""
        known = self._copies.get(it.name)
        if known is None or known[0] is not it or known[1] != made_from:
            known = self._copies[it.name] = (it, made_from, self._make(it, made_from))
        return known[2]


def _in_zones(it: InstanceType, zones: frozenset[str]) -> InstanceType:
    return it.model_copy(update={"offerings": [o for o in it.offerings if o.zone in zones]})


def _with_offerings(it: InstanceType, offerings: list[Offering]) -> InstanceType:
    return it.model_copy(update={"offerings": [*it.offerings, *offerings]})


class ZoneFilter:
    """Instance types with only their offerings in some zones, each copy kept (CatalogCopies) while the
    catalog hands out the same type object and the zones stay the same."""

    def __init__(self) -> None:
        self._copies: CatalogCopies[frozenset[str]] = CatalogCopies(_in_zones)

    def of(self, catalog: list[InstanceType], zones: frozenset[str]) -> list[InstanceType]:
        return [self._copies.of(it, zones) for it in catalog]


class ReservedOfferings:
    """Instance types with the reserved offerings of the node classes' capacity reservations added, each
    copy kept (CatalogCopies) while the catalog hands out the same type object and its reserved offerings
    compare equal (a reservation whose room changed makes a new copy)."""

    def __init__(self) -> None:
        self._copies: CatalogCopies[list[Offering]] = CatalogCopies(_with_offerings)

    def added(self, catalog: list[InstanceType], reserved: dict[str, list[Offering]]) -> list[InstanceType]:
        """`catalog` with `reserved[name]` (by type name) appended to the offerings of each type named."""
        return [self._copies.of(it, extra) if (extra := reserved.get(it.name)) else it for it in catalog]


class ProvisioningActivities:
    """`solve` and `apply_plan`. `metrics` receives the scheduling duration and queue depth (controller
    `provisioner`) and the NodeClaims created (reason `provisioned`); `policies` are Karpenter's
    scheduling settings (scheduling.types.SchedulingPolicies). The instance-type options one solve builds
    are kept for the next (scheduling.provisioning.catalog.OptionCache); they are built from the zone-limited catalog
    (ZoneFilter, ReservedOfferings), so the cache is this class's own."""

    def __init__(
        self,
        kube: Kube,
        cloud: CloudProvider,
        recorder: kubeops.Recorder,
        starter: WorkflowStarter,
        metrics: Metrics | None = None,
        policies: SchedulingPolicies | None = None,
    ) -> None:
        self.kube = kube
        self.policies = policies or SchedulingPolicies()
        self.options = OptionCache()
        self.cloud = cloud
        self.recorder = recorder
        self.metrics = metrics or Metrics()
        self.launcher = ClaimLauncher(kube, starter, self.metrics)
        self._nominated: dict[str, datetime] = {}  # pod uid -> when last nominated
        self._lock = threading.Lock()
        self.status = ProvisioningStatus(kube, cloud, recorder)
        self._in_zones = ZoneFilter()
        self._with_reserved = ReservedOfferings()

    # -- solve -------------------------------------------------------------------------------------------

    @activity.defn(name="solve")
    def solve(self, rnd: ProvisionRound) -> ProvisionPlan:
        """Snapshot the cluster and run the scheduler. A NodePool or EC2NodeClass that is invalid,
        unsupported or does not resolve is reported (on its status, with an Event, and in `plan.invalid`)
        and left out, so the others still provision in this round; pods that only it could take stay
        pending with a reason naming it. Raises only for infrastructure failures (a retryable cloud error,
        the Kubernetes API), which Temporal retries. Heartbeats throughout."""
        with heartbeating():
            return self._solve()

    def _solve(self) -> ProvisionPlan:
        ready = self.status.refresh()
        node_classes, zones, node_pools, invalid = ready.node_classes, ready.zones, ready.node_pools, ready.invalid
        pods = self.kube.list(r.POD)
        pending = [p for p in pods if is_provisionable(p)]
        if not pending:
            return ProvisionPlan(invalid=invalid)
        claims, volumes, classes = self.kube.list(r.PVC), self.kube.list(r.PV), self.kube.list(r.STORAGECLASS)
        readiness = VolumeReadiness(claims, volumes, classes)
        waiting = [UnschedulablePod(pod=pod_key(p), reason=why) for p in pending if (why := readiness.problem(p))]
        waiting_keys = {u.pod for u in waiting}
        inp = SchedulingInput(
            pods=[p for p in pending if pod_key(p) not in waiting_keys],
            bound_pods=[p for p in pods if is_bound(p)],
            nodes=self.kube.list(r.NODE),
            node_claims=self._node_claims(),
            node_pools=node_pools,
            node_classes=node_classes,
            instance_types=self._catalog(zones, node_classes),
            daemonsets=self.kube.list(r.DAEMONSET),
            persistent_volume_claims=claims,
            persistent_volumes=volumes,
            storage_classes=classes,
            runtime_classes=self.kube.list(r.RUNTIMECLASS),
            namespaces=self.kube.list(r.NAMESPACE),
            **self.policies.fields(),
        )
        with self.metrics.scheduling(PROVISIONER, len(pending)):
            plan = scheduling.solve(inp, self.options) if inp.pods else Plan()
        plan = plan.model_copy(update={"unschedulable": [*waiting, *plan.unschedulable]})
        self.metrics.unschedulable_pods.labels(controller=PROVISIONER).set(len(plan.unschedulable))
        self.metrics.ignored_pods.set(sum(1 for u in plan.unschedulable if u.reason.startswith(IGNORED)))
        placed = sum(len(p.pods) for p in plan.existing_nodes)
        on_existing = existing_nominations(plan.existing_nodes, inp.node_claims)
        nominated = dict(list(on_existing.items())[:POD_EVENTS_PER_ROUND])
        on_claims = {key for claim in plan.node_claims for key in claim.pods} | nominated.keys()
        return ProvisionPlan(
            node_claims=plan.node_claims,
            unschedulable=plan.unschedulable,
            invalid=invalid,
            pending_pods=len(pending),
            placed_on_existing=placed,
            pod_uids={key: uid for p in pending if (key := pod_key(p)) in on_claims and (uid := _uid(p))},
            nominated=nominated,
            node_pools_without_types=plan.node_pools_without_types,
        )

    def _node_claims(self) -> list[NodeClaim]:
        out: list[NodeClaim] = []
        for obj in self.kube.list(r.NODECLAIM):
            try:
                out.append(NodeClaim.model_validate(obj))
            except ValidationError:
                log.warning("skipping malformed NodeClaim %s", obj.get("metadata", {}).get("name"))
        return out

    def _catalog(self, zones: set[str], node_classes: list[EC2NodeClass]) -> list[InstanceType]:
        """The base catalog, offerings limited to zones where a ready node class has subnets, plus the
        reserved offerings of the capacity reservations the node classes select (the scheduler gives
        each node class only its own: scheduling.provisioning.catalog.build_options)."""
        catalog = self.cloud.instance_types(None)
        reserved: dict[str, dict[str, Offering]] = {}  # type -> reservation id -> offering
        for nc in node_classes:
            if nc.status.capacity_reservations:
                for it in self.cloud.instance_types(nc):
                    for o in it.offerings:
                        if o.capacity_type == CAPACITY_TYPE_RESERVED and o.reservation_id:
                            reserved.setdefault(it.name, {})[o.reservation_id] = o
        if reserved:
            catalog = self._with_reserved.added(catalog, {name: [*by_id.values()] for name, by_id in reserved.items()})
        if not zones:
            return catalog
        return self._in_zones.of(catalog, frozenset(zones))

    # -- apply -------------------------------------------------------------------------------------------

    @activity.defn(name="apply_plan")
    def apply_plan(self, inp: ApplyPlanInput) -> ApplyPlanResult:
        """Create the planned NodeClaims (AlreadyExists is fine: a retried round), start one workflow per
        claim, update each NodePool's counts, and tell pending pods why they stay pending (FailedScheduling)
        and each NodePool whose requirements leave it no instance type so (NoCompatibleInstanceTypes)."""
        with heartbeating():
            return self._apply_plan(inp)

    def _apply_plan(self, inp: ApplyPlanInput) -> ApplyPlanResult:
        created = self.launcher.launch(inp.round, inp.plan.node_claims, PROVISIONED)
        pools = [obj["metadata"]["name"] for obj in self.kube.list(r.NODEPOOL) if is_managed(obj)]
        nodepool_status.sync_all_counts(self.kube, pools)
        for pod in inp.plan.unschedulable[:POD_EVENTS_PER_ROUND]:
            namespace, _, name = pod.pod.partition("/")
            pod_obj = kubeops.get_or_none(self.kube, r.POD, name, namespace)
            if pod_obj is not None:
                self.recorder.record(pod_obj, "Warning", "FailedScheduling", f"Failed to schedule pod, {pod.reason}")
        for pool in inp.plan.node_pools_without_types:
            if (pool_obj := kubeops.get_or_none(self.kube, r.NODEPOOL, pool)) is not None:
                self.recorder.record(pool_obj, "Warning", "NoCompatibleInstanceTypes", NO_COMPATIBLE_TYPES)
        self._nominate(inp, set(created))
        return ApplyPlanResult(created=created)

    def _nominate(self, inp: ApplyPlanInput, created: set[str]) -> None:
        """Karpenter's `Nominated` Event on each pod a new claim of this round is for ("Pod should schedule
        on: nodeclaim/<name>"), then on each pod placed on a NodeClaim in flight or a Node
        ("nodeclaim/<name>, node/<name>"), so `kubectl describe pod` says which node is coming for it; at
        most POD_EVENTS_PER_ROUND a round, as Karpenter rate-limits nominations too, and a pod this worker
        nominated within NOMINATION_DEDUPE is not again (Karpenter dedupes them by pod): a pod waiting for
        a claim in flight is placed there at every round until it binds, and its node registers meanwhile."""
        where: dict[str, str] = {}
        for planned in inp.plan.node_claims:
            name = self.launcher.claim_name(inp.round, planned)
            if name in created:
                where.update(dict.fromkeys(planned.pods, f"nodeclaim/{name}"))
        where.update({key: target for key, target in inp.plan.nominated.items() if key not in where})
        now = datetime.now(UTC)
        with self._lock:
            self._nominated = {k: at for k, at in self._nominated.items() if now - at < NOMINATION_DEDUPE}
        for key, target in list(where.items())[:POD_EVENTS_PER_ROUND]:
            uid = inp.plan.pod_uids.get(key)
            if not uid:
                continue
            with self._lock:
                repeat = uid in self._nominated
                self._nominated[uid] = now
            if not repeat:
                namespace, _, pod_name = key.partition("/")
                pod = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": pod_name, "namespace": namespace,
                                                                      "uid": uid}}  # fmt: skip
                self.recorder.record(pod, "Normal", "Nominated", f"Pod should schedule on: {target}")


def existing_nominations(placements: Sequence[ExistingNodePlacement], claims: Sequence[NodeClaim]) -> dict[str, str]:
    """Each pod placed on capacity that exists or is coming, with where, as Karpenter's Nominated event
    names it: `nodeclaim/<name>` for a NodeClaim in flight, `nodeclaim/<name>, node/<name>` for a Node of a
    NodeClaim, `node/<name>` for another Node."""
    claim_of = {c.status.node_name: c.name for c in claims if c.status.node_name}
    out: dict[str, str] = {}
    for placement in placements:
        if placement.node_claim:
            target = f"nodeclaim/{placement.name}"
        elif placement.name in claim_of:
            target = f"nodeclaim/{claim_of[placement.name]}, node/{placement.name}"
        else:
            target = f"node/{placement.name}"
        out.update(dict.fromkeys(placement.pods, target))
    return out


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")
