"""The drift sweep: one periodic look per EC2NodeClass, in the leader, instead of a periodic check per node.

Running claims do not poll for drift (workflows.nodeclaim): a NodePool or EC2NodeClass spec change is
signalled at once by workers.watchers.DriftTrigger. What changes without any spec change is what the
node class resolves to in EC2: an AMI released behind an `@latest` alias (or a newer image matching the
amiSelectorTerms), a subnet or security group tagged or untagged, an instance type no longer offered.
Every SWEEP_SECONDS the sweep resolves each EC2NodeClass once (the same per-node-class caches as the
running check, activities.drift: at most one cloud lookup per node class per RESOLVED_TTL_SECONDS, one
instance listing for the whole cluster, the offered instance types once per catalog refresh), compares
every running claim of it (Initialized, not being deleted) with that (scheduling.drift, its AMI,
subnet, security group and instance type checks only), and signals `check_drift` only to the claims
whose finding differs from their Drifted condition: found drifted but not marked, or marked for one of
these reasons that no longer holds. The claim's workflow then runs the full check, which sets the
condition. The sweep is a trigger, never the judge.

An AMI release is noticed within SWEEP_SECONDS plus the cache TTL (about 2 minutes). A claim whose
finding stays unsettled (its check saw the previous resolution) is signalled again after
RESIGNAL_SECONDS, not at every sweep. The cost is independent of the number of nodes in Temporal
actions (one signal per drifted claim) and a NodeClaim list per sweep for the API server.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from activities.drift import (
    INSTANCE_TYPE_GRACE,
    RESOLVED_TTL_SECONDS,
    InstanceNetworks,
    OfferedInstanceTypes,
    ResolvedNodeClasses,
    instance_network,
    resolved_selection,
)
from apis import labels
from apis.ec2nodeclass import EC2NodeClass
from apis.meta import parse_rfc3339
from cloudprovider.types import CloudProvider, instance_id_of
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.drift import (
    AMI_DRIFTED,
    INSTANCE_TYPE_NOT_FOUND,
    SECURITY_GROUP_DRIFTED,
    SUBNET_DRIFTED,
    DriftFacts,
    find_drift,
)
from workers.starter import TemporalStarter

log = logging.getLogger(__name__)

SWEEP_SECONDS = 60.0
RESIGNAL_SECONDS = 2 * RESOLVED_TTL_SECONDS + SWEEP_SECONDS
SIGNALS_PER_SECOND = 100.0
# The reasons the sweep judges; a claim marked Drifted for another one is the watchers' business.
SWEPT_REASONS = frozenset({AMI_DRIFTED, SUBNET_DRIFTED, SECURITY_GROUP_DRIFTED, INSTANCE_TYPE_NOT_FOUND})


def _condition(claim: Obj, type_: str) -> dict[str, Any]:
    conditions = (claim.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == type_), {})


def is_running(claim: Obj) -> bool:
    """Initialized and not being deleted: the claims whose workflow is in its running phase."""
    return _condition(claim, "Initialized").get("status") == "True" and not claim["metadata"].get("deletionTimestamp")


def marked_reason(claim: Obj) -> str:
    """The reason of the claim's Drifted condition while it is True, else ''."""
    drifted = _condition(claim, "Drifted")
    return str(drifted.get("reason") or "") if drifted.get("status") == "True" else ""


def needs_check(marked: str, found: str) -> bool:
    """Whether a claim marked Drifted for `marked` ('' = not drifted) whose sweep finding is `found`
    ('' = none of SWEPT_REASONS) should run its full check: drift found and not marked, or marked for a
    swept reason other than what is found now. A claim drifted for another reason stays as it is."""
    if not marked:
        return bool(found)
    return marked in SWEPT_REASONS and marked != found


class DriftSweep:
    """Runs the sweep every `interval` seconds in the leader (see the module docstring); `sweep()` is one
    round, which returns the names it signalled. Never raises out of `run`: a failed round is logged and
    the next one tries again."""

    def __init__(
        self,
        kube: Kube,
        cloud: CloudProvider,
        starter: TemporalStarter,
        loop: asyncio.AbstractEventLoop,
        interval: float = SWEEP_SECONDS,
        signals_per_second: float = SIGNALS_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.starter = starter
        self.loop = loop
        self.interval = interval
        self.pause = 1.0 / signals_per_second
        self.monotonic = monotonic
        self.resolved = ResolvedNodeClasses(cloud)
        self.networks = InstanceNetworks(cloud)
        self.offered = OfferedInstanceTypes(cloud)
        self._signalled: dict[str, tuple[str, float]] = {}  # claim -> (finding, when) last signalled
        self._stop = threading.Event()

    def run(self, stop: threading.Event) -> None:
        self._stop = stop
        while not stop.wait(self.interval):
            try:
                self.sweep()
            except Exception:
                log.exception("drift sweep failed; retrying at the next one")

    def sweep(self) -> list[str]:
        """One round: find, per EC2NodeClass, the running claims whose finding differs from their
        condition, and signal them `check_drift` (not again within RESIGNAL_SECONDS for one finding)."""
        classes: dict[str, EC2NodeClass] = {}
        for obj in self.kube.list(r.EC2NODECLASS):
            try:
                classes[obj["metadata"]["name"]] = EC2NodeClass.model_validate(obj)
            except ValidationError:
                continue  # its status says why; its claims keep their backstop check
        now, clock = datetime.now(UTC), self.monotonic()
        selections: dict[str, tuple[list[str], list[str], list[str], frozenset[str]]] = {}
        due: list[tuple[str, str]] = []
        seen: set[str] = set()
        for claim in self.kube.list(r.NODECLAIM):
            name = str(claim["metadata"]["name"])
            seen.add(name)
            class_name = str(((claim.get("spec") or {}).get("nodeClassRef") or {}).get("name") or "")
            if not is_running(claim) or class_name not in classes:
                continue
            if class_name not in selections:
                node_class = classes[class_name]
                selections[class_name] = (*resolved_selection(node_class, self.resolved), self.offered.get(node_class))
            found = self._finding(claim, *selections[class_name], now)
            if not needs_check(marked_reason(claim), found):
                self._signalled.pop(name, None)
                continue
            last = self._signalled.get(name)
            if last is not None and last[0] == found and clock - last[1] < RESIGNAL_SECONDS:
                continue
            due.append((name, found))
        self._signalled = {name: mark for name, mark in self._signalled.items() if name in seen}
        return self._signal_all(due, clock)

    def _finding(
        self,
        claim: Obj,
        ami_ids: list[str],
        subnet_ids: list[str],
        group_ids: list[str],
        offered: frozenset[str],
        now: datetime,
    ) -> str:
        """The first of SWEPT_REASONS that holds for the claim now, or ''."""
        status = claim.get("status") or {}
        subnet_id, instance_groups = instance_network(None)
        instance_id = instance_id_of(str(status.get("providerID") or ""))
        if instance_id:
            subnet_id, instance_groups = self.networks.get(instance_id)
        launched = parse_rfc3339(_condition(claim, "Launched").get("lastTransitionTime"))
        judge_type = launched is not None and launched < now - INSTANCE_TYPE_GRACE
        facts = DriftFacts(
            image_id=str(status.get("imageID") or ""),
            ami_ids=sorted(ami_ids),
            subnet_id=subnet_id,
            subnet_ids=sorted(subnet_ids),
            security_group_ids=instance_groups,
            resolved_security_group_ids=sorted(group_ids),
            instance_type=(claim["metadata"].get("labels") or {}).get(labels.INSTANCE_TYPE, "") if judge_type else "",
            offered_instance_types=offered if judge_type else frozenset(),
        )
        drift = find_drift(facts)
        return drift.reason if drift is not None and drift.reason in SWEPT_REASONS else ""

    def _signal_all(self, due: list[tuple[str, str]], clock: float) -> list[str]:
        signalled: list[str] = []
        for name, found in due:
            if self._stop.is_set():
                break
            reason = f"drift sweep: {found or 'no longer drifted'}"
            try:
                coro = self.starter.signal_node_claim(name, "check_drift", reason)
                asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)
            except Exception:  # Temporal unreachable: the next sweep tries again
                log.exception("signalling nodeclaim-%s failed; the next sweep retries", name)
                break
            self._signalled[name] = (found, clock)
            signalled.append(name)
            self._stop.wait(self.pause)
        if signalled:
            log.info("drift sweep: %d NodeClaims asked to check drift", len(signalled))
        return signalled
