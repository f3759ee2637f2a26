"""The claim sweep: the leader's periodic look at every running claim, for what changes without any event.

Running claims hold no timer and poll nothing (workflows.nodeclaim). Two things reach them from here, and
one reaches their instances:

- Expiration: once a NodeClaim's creationTimestamp + spec.expireAfter has passed (Karpenter v1's
  expiration, which `expireAfter: Never` turns off), its workflow is signalled `expire` with the reason
  `expired after <expireAfter>`; the workflow marks the claim Expired, drains and terminates it.
- Drift: a NodePool or EC2NodeClass spec change is signalled at once by workers.watchers.DriftTrigger. What
  changes without any spec change is what the node class resolves to in EC2: an AMI released behind an
  `@latest` alias (or a newer image matching the amiSelectorTerms), a subnet or security group tagged or
  untagged, an instance type no longer offered. The sweep judges every drift reason (scheduling.drift,
  with the facts gathered as the running check gathers them, activities.nodeclaim.drift: at most one cloud lookup
  per node class per RESOLVED_TTL_SECONDS, one instance listing for the whole cluster, the offered
  instance types once per catalog refresh), so a spec change made while no worker led, or a trigger
  signal that failed, is caught here too. It signals `check_drift` only to the claims whose finding
  differs from their Drifted condition; their workflow then runs the full check, which sets the
  condition. The sweep is a trigger, never the judge.

- Naming: an instance is launched with `Name` the NodeClaim's name, unless the EC2NodeClass's `tags` set
  one. Once the claim's Node registered, the sweep tags `Name` with the Node's name, as Karpenter's
  tagging controller does (it sets only the tags an instance lacks, so a `Name` of the user's stays), so
  the EC2 console shows the name `kubectl get nodes` does. At most NAMES_PER_SWEEP a round.

Every `claim_sweep_interval` (workers.settings; SWEEP_SECONDS by default): an expiry is acted on within
that, an AMI release within that plus the cache TTL (about 2 minutes by default). A claim still
unsettled (its workflow has not acted yet, or its check saw the previous resolution) is signalled again
after RESIGNAL_SECONDS, not at every sweep. The cost is independent of the
number of nodes in Temporal actions (one signal per expired or drifted claim). For the API server it is
nothing: the leader reads NodeClaims, NodePools and EC2NodeClasses from its watch cache (kube.watch_cache),
and LISTs them only while its watches have not listed yet.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from activities.nodeclaim.drift import (
    RESOLVED_TTL_SECONDS,
    InstanceNetworks,
    OfferedInstanceTypes,
    ResolvedNodeClasses,
    drift_facts,
)
from activities.nodeclaim.expiration import EXPIRED, expire_after, expiry
from activities.periodic import every
from apis import labels
from apis.ec2nodeclass import EC2NodeClass
from apis.nodeclaim import DRIFTED, INITIALIZED, NodeClaim
from apis.nodepool import NodePool
from cloudprovider.errors import CloudProviderError
from cloudprovider.types import CloudProvider, instance_id_of
from kube import resources as r
from kube.types import Kube, Obj
from kube.watch_cache import WatchCache, read
from scheduling.drift import find_drift

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

SWEEP_SECONDS = 60.0
RESIGNAL_SECONDS = 2 * RESOLVED_TTL_SECONDS + SWEEP_SECONDS
SIGNALS_PER_SECOND = 100.0
NAMES_PER_SWEEP = 50  # CreateTags calls a round; EC2 refills its mutating bucket at 5 a second


def _condition(claim: Obj, type_: str) -> dict[str, Any]:
    conditions = (claim.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == type_), {})


def is_running(claim: Obj) -> bool:
    """Initialized and not being deleted: the claims whose workflow is in its running phase."""
    return _condition(claim, INITIALIZED).get("status") == "True" and not claim["metadata"].get("deletionTimestamp")


def marked_reason(claim: Obj) -> str:
    """The reason of the claim's Drifted condition while it is True, else ''."""
    drifted = _condition(claim, DRIFTED)
    return str(drifted.get("reason") or "") if drifted.get("status") == "True" else ""


def needs_check(marked: str, found: str) -> bool:
    """Whether a claim marked Drifted for `marked` ('' = not drifted) whose sweep finding is `found`
    ('' = no drift) should run its full check: the two differ."""
    return marked != found


class ClaimSignaller(Protocol):
    """What the sweep needs of the worker's workflow starter (workers.temporal.starter.TemporalStarter):
    a signal to one NodeClaim's workflow, to expire or to check its drift, run on the worker's event loop
    (the starter names the signal, workflows.messages: the activities do not import the workflows)."""

    def expire_node_claim(self, name: str, reason: str) -> Coroutine[Any, Any, bool]: ...

    def check_node_claim_drift(self, name: str, reason: str) -> Coroutine[Any, Any, bool]: ...


class ClaimSweep:
    """Runs the sweep every `interval` seconds in the leader (see the module docstring); `sweep()` is one
    round, which returns the names it signalled. Never raises out of `run`: a failed round is logged and
    the next one tries again."""

    def __init__(
        self,
        kube: Kube,
        cloud: CloudProvider,
        starter: ClaimSignaller,
        loop: asyncio.AbstractEventLoop,
        interval: float = SWEEP_SECONDS,
        signals_per_second: float = SIGNALS_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        cache: WatchCache | None = None,
    ) -> None:
        self.kube = kube
        self.cache = cache  # the leader's watch cache: read instead of LISTing, once synced
        self.cloud = cloud
        self.starter = starter
        self.loop = loop
        self.interval = interval
        self.pause = 1.0 / signals_per_second
        self.monotonic = monotonic
        self.clock = clock
        self.resolved = ResolvedNodeClasses(cloud)
        self.networks = InstanceNetworks(cloud)
        self.offered = OfferedInstanceTypes(cloud)
        self._signalled: dict[str, tuple[str, float]] = {}  # claim -> (finding, when) last signalled
        self._stop = threading.Event()

    def run(self, stop: threading.Event) -> None:
        self._stop = stop
        every(self.interval, stop, self.sweep, log, "claim sweep")

    def sweep(self) -> list[str]:
        """One round: signal `expire` to the claims past their expireAfter and `check_drift` to the running
        claims whose drift finding differs from their condition (neither again within RESIGNAL_SECONDS
        for one finding)."""
        pools = _valid(NodePool, read(self.kube, r.NODEPOOL, self.cache))
        classes = _valid(EC2NodeClass, read(self.kube, r.EC2NODECLASS, self.cache))
        now, clock = self.clock(), self.monotonic()
        due: list[tuple[str, str, str]] = []  # (claim, finding, its expireAfter)
        seen: set[str] = set()
        claims = read(self.kube, r.NODECLAIM, self.cache)
        for claim in claims:
            name = str(claim["metadata"]["name"])
            seen.add(name)
            found = self._finding(claim, pools, classes, now)
            if found is None:
                self._signalled.pop(name, None)
                continue
            last = self._signalled.get(name)
            if last is not None and last[0] == found and clock - last[1] < RESIGNAL_SECONDS:
                continue
            due.append((name, found, expire_after(claim)))
        self._signalled = {name: mark for name, mark in self._signalled.items() if name in seen}
        signalled = self._signal_all(due, clock)
        self._name_instances(claims)
        return signalled

    def _name_instances(self, claims: list[Obj]) -> list[str]:
        """Tag `Name` = its Node's name on the instance of each registered claim not being deleted whose
        `Name` is still the claim's own (the launch's, when the EC2NodeClass's tags set none), at most
        NAMES_PER_SWEEP a round: CreateTags draws on the EC2 bucket launches use. Returns the instances
        named. A claim whose instance the last listing did not have waits for the next listing."""
        named: list[str] = []
        for claim in claims:
            if len(named) >= NAMES_PER_SWEEP or self._stop.is_set():
                break
            meta, status = claim["metadata"], claim.get("status") or {}
            node, instance_id = str(status.get("nodeName") or ""), instance_id_of(str(status.get("providerID") or ""))
            if not node or not instance_id or meta.get("deletionTimestamp"):
                continue
            if self.networks.name(instance_id) != meta["name"] or node == meta["name"]:
                continue
            try:
                self.cloud.name_instance(instance_id, node)
            except CloudProviderError as err:  # e.g. no permission: the next sweep tries again
                log.warning("claim sweep: instance %s of %s not named %s: %s", instance_id, meta["name"], node, err)
                break
            self.networks.named(instance_id, node)
            named.append(instance_id)
        if named:
            log.info("claim sweep: %d instances named after their Nodes", len(named))
        return named

    def _finding(
        self, claim: Obj, pools: dict[str, NodePool], classes: dict[str, EC2NodeClass], now: datetime
    ) -> str | None:
        """What the claim is to be signalled for, or None: EXPIRED for a claim not being deleted past its
        expireAfter; else, for a running claim whose EC2NodeClass is known and valid, the drift reason found
        now ('' for none) when it differs from the reason the claim is marked Drifted for (needs_check)."""
        if claim["metadata"].get("deletionTimestamp"):
            return None
        expires = expiry(claim)
        if expires is not None and now >= expires:
            return EXPIRED
        class_name = str(((claim.get("spec") or {}).get("nodeClassRef") or {}).get("name") or "")
        if not is_running(claim) or class_name not in classes:
            return None
        try:
            model = NodeClaim.model_validate(claim)
        except ValidationError:
            return None  # the running check reports it; nothing to compare here
        pool = pools.get(model.metadata.labels.get(labels.NODEPOOL, ""))
        instance_id = instance_id_of(model.status.provider_id or "")
        try:
            facts = drift_facts(
                model,
                pool,
                classes[class_name],
                self.cloud,
                instance_id,
                self.resolved,
                self.networks,
                self.offered,
                now,
            )
        except CloudProviderError as err:  # one node class the cloud cannot resolve now stops no other claim
            log.warning("claim sweep: drift of %s not judged: %s", model.metadata.name, err)
            return None
        drift = find_drift(facts)
        found = drift.reason if drift is not None else ""
        return found if needs_check(marked_reason(claim), found) else None

    def _signal_all(self, due: list[tuple[str, str, str]], clock: float) -> list[str]:
        signalled: list[str] = []
        for name, found, lifetime in due:
            if self._stop.is_set():
                break
            if found == EXPIRED:
                coro = self.starter.expire_node_claim(name, f"expired after {lifetime}")
            else:
                coro = self.starter.check_node_claim_drift(name, f"claim sweep: {found or 'no longer drifted'}")
            try:
                asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)
            except Exception:  # Temporal unreachable: the next sweep tries again
                log.exception("signalling nodeclaim-%s failed; the next sweep retries", name)
                break
            self._signalled[name] = (found, clock)
            signalled.append(name)
            self._stop.wait(self.pause)
        if signalled:
            log.info("claim sweep: %d NodeClaims signalled to expire or check drift", len(signalled))
        return signalled


def _valid(model: type[M], objects: list[Obj]) -> dict[str, M]:
    """The objects that validate, by name; one that does not is left out (its status says why, and its
    claims are not judged until it is fixed)."""
    valid: dict[str, M] = {}
    for obj in objects:
        try:
            valid[obj["metadata"]["name"]] = model.model_validate(obj)
        except ValidationError:
            continue
    return valid
