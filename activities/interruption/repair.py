"""Node repair on the leader, behind the `NodeRepair` feature gate (off by default, as in Karpenter).

Every `interval_seconds` the `NodeRepairer` reads the Nodes and NodeClaims, asks scheduling.repair which
Nodes have been unhealthy long enough (Ready False or Unknown for 30 minutes) in a NodePool that is not
too unhealthy as a whole (at most 20% of its nodes), and signals each one's NodeClaim workflow `repair`:
the instance is terminated without draining (workflows.nodeclaim). Events, as Karpenter records them:
`NodeRepair` (Warning) on the Node and the NodeClaim when a repair starts, and `NodeRepairBlocked`
(Warning) on a NodePool with too many unhealthy nodes, naming the counts.

A NodeClaim signalled is remembered (boundedly) and not signalled again; a failed list or signal is
logged and tried at the next pass. The workflow's own `DisruptionTerminating` event says the reason too.
Each repair its workflow accepted counts in `karpenter_nodeclaims_unhealthy_disrupted_total` (the
condition, the NodeClaim's NodePool, capacity type and image ID), as Karpenter counts it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from activities.interruption.consumer import Bounded, Recorder
from activities.metrics.labels import owner_labels
from activities.metrics.registry import Metrics
from kube import resources as r
from kube.errors import KubeError
from kube.types import Kube, Obj
from scheduling.repair import decide_repairs

log = logging.getLogger(__name__)
REPAIR_CHECK_SECONDS = 60.0
# Signal the `repair` of NodeClaim `name`'s workflow with `reason`: True when the workflow accepted it,
# False when it is not running; raises when the signal could not be delivered. Blocking, thread-safe.
RepairSignal = Callable[[str, str], bool]
REPAIR_REASON = "NodeRepair"
BLOCKED_REASON = "NodeRepairBlocked"


class NodeRepairer:
    """See the module docstring. `signal_repair(name, reason)` signals the NodeClaim workflow `repair`
    (True when accepted, False when it no longer runs; raises when undelivered). `run(stop)` until
    `stop`; `check()` is one pass (tests call it)."""

    def __init__(
        self,
        kube: Kube,
        signal_repair: RepairSignal,
        recorder: Recorder,
        interval_seconds: float = REPAIR_CHECK_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        metrics: Metrics | None = None,
    ) -> None:
        self.metrics = metrics or Metrics()
        self.kube = kube
        self.signal_repair = signal_repair
        self.recorder = recorder
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.repaired = 0  # NodeClaims whose workflow accepted `repair` since built
        self._signalled = Bounded()

    def run(self, stop: threading.Event) -> None:
        """A pass now, then every `interval_seconds`, until `stop`."""
        while not stop.is_set():
            self.check()
            stop.wait(self.interval_seconds)

    def check(self) -> int:
        """One pass; returns how many NodeClaims it repaired. Never raises."""
        try:
            nodes = self.kube.list(r.NODE)
            claims = self.kube.list(r.NODECLAIM)
        except Exception:
            log.exception("node repair: listing Nodes and NodeClaims failed; trying again at the next pass")
            return 0
        by_node = {str(c["status"]["nodeName"]): c for c in claims if (c.get("status") or {}).get("nodeName")}
        decision = decide_repairs(nodes, {n: str(c["metadata"]["name"]) for n, c in by_node.items()}, self.clock())
        for blocked in decision.blocked:
            log.warning("node repair blocked in NodePool %s: %s", blocked.node_pool, blocked.message)
            pool = self._get(r.NODEPOOL, blocked.node_pool)
            if pool is not None:
                self.recorder.record(pool, "Warning", BLOCKED_REASON, blocked.message)
        nodes_by_name = {str(n["metadata"]["name"]): n for n in nodes}
        repaired = 0
        for repair in decision.repairs:
            claim = by_node[repair.node]
            uid = str(claim["metadata"].get("uid") or claim["metadata"]["name"])
            if uid in self._signalled:
                continue
            reason = f"Unhealthy: {repair.message}; terminated without draining (node repair)"
            try:
                accepted = self.signal_repair(repair.node_claim, reason)
            except Exception:
                log.exception("node repair: signalling NodeClaim %s failed; trying again at the next pass",
                              repair.node_claim)  # fmt: skip
                continue
            self._signalled.add(uid)
            if not accepted:
                log.info("node repair: NodeClaim %s's workflow is no longer running", repair.node_claim)
                continue
            repaired += 1
            owner = owner_labels(claim["metadata"].get("labels") or {})
            self.metrics.nodeclaims_unhealthy_disrupted.labels(
                condition=repair.condition,
                nodepool=owner["nodepool"] or repair.node_pool,
                capacity_type=owner["capacity_type"],
                image_id=str((claim.get("status") or {}).get("imageID") or ""),
            ).inc()
            log.info("node repair: NodeClaim %s (NodePool %s): %s", repair.node_claim, repair.node_pool, reason)
            for involved in (claim, nodes_by_name[repair.node]):
                self.recorder.record(involved, "Warning", REPAIR_REASON, reason)
        self.repaired += repaired
        return repaired

    def _get(self, resource: r.Resource, name: str) -> Obj | None:
        try:
            return self.kube.get(resource, name)
        except KubeError:
            return None
