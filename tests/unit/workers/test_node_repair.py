"""activities.interruption.repair.NodeRepairer with an in-memory Kube: a Node NotReady for 30 minutes has its
NodeClaim signalled `repair` once, with events on the Node and the NodeClaim; a NodePool with more than
20% of its nodes unhealthy gets `NodeRepairBlocked` and no repair; a failed signal is tried again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from activities.interruption.repair import BLOCKED_REASON, REPAIR_REASON, NodeRepairer
from activities.metrics.registry import Metrics
from kube import resources as r
from kube.fake import MemKube
from kube.types import Obj

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def add_node(kube: MemKube, name: str, pool: str, ready: str = "True", minutes_ago: int = 60) -> None:
    since = (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.create(
        r.NODE,
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": pool}},
            "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}]},
        },
    )
    kube.create(
        r.NODECLAIM,
        {
            "kind": "NodeClaim",
            "metadata": {
                "name": f"claim-{name}",
                "uid": f"uid-{name}",
                "labels": {"karpenter.sh/nodepool": pool, "karpenter.sh/capacity-type": "spot"},
            },
            "status": {"nodeName": name, "imageID": "ami-0123"},
        },
    )


class Fakes:
    def __init__(self) -> None:
        self.kube = MemKube()
        self.signalled: list[tuple[str, str]] = []
        self.fail = False
        self.events: list[tuple[str, str, str]] = []
        self.metrics = Metrics()

    def signal(self, name: str, reason: str) -> bool:
        if self.fail:
            raise ConnectionError("temporal unreachable")
        self.signalled.append((name, reason))
        return True

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append((f"{involved.get('kind')}/{involved['metadata']['name']}", event_type, reason))

    def repairer(self) -> NodeRepairer:
        return NodeRepairer(self.kube, self.signal, self, clock=lambda: NOW, metrics=self.metrics)


def test_a_node_not_ready_for_30_minutes_is_repaired_once() -> None:
    fakes = Fakes()
    for i in range(4):
        add_node(fakes.kube, f"ok-{i}", "default")
    add_node(fakes.kube, "sick", "default", "Unknown", 45)
    repairer = fakes.repairer()
    assert repairer.check() == 1
    assert [name for name, _ in fakes.signalled] == ["claim-sick"]
    assert fakes.signalled[0][1] == (
        "Unhealthy: Node sick has been Ready=Unknown for 45m; terminated without draining (node repair)"
    )
    assert sorted(fakes.events) == [
        ("Node/sick", "Warning", REPAIR_REASON),
        ("NodeClaim/claim-sick", "Warning", REPAIR_REASON),
    ]
    assert repairer.check() == 0 and len(fakes.signalled) == 1
    counted = {"condition": "Ready", "nodepool": "default", "capacity_type": "spot", "image_id": "ami-0123"}
    assert fakes.metrics.registry.get_sample_value("karpenter_nodeclaims_unhealthy_disrupted_total", counted) == 1


def test_a_pool_with_too_many_unhealthy_nodes_is_blocked_with_an_event() -> None:
    fakes = Fakes()
    fakes.kube.create(r.NODEPOOL, {"kind": "NodePool", "metadata": {"name": "flaky"}})
    for i in range(3):
        add_node(fakes.kube, f"ok-{i}", "flaky")
    add_node(fakes.kube, "sick-1", "flaky", "False", 40)
    add_node(fakes.kube, "sick-2", "flaky", "False", 40)  # 2 of 5 unhealthy > 1 allowed
    assert fakes.repairer().check() == 0
    assert fakes.signalled == []
    assert fakes.events == [("NodePool/flaky", "Warning", BLOCKED_REASON)]


def test_a_failed_signal_is_tried_at_the_next_pass() -> None:
    fakes = Fakes()
    add_node(fakes.kube, "sick", "solo", "False", 31)  # 1 of 1: 20% rounded up allows it
    repairer = fakes.repairer()
    fakes.fail = True
    assert repairer.check() == 0 and fakes.events == []
    fakes.fail = False
    assert repairer.check() == 1 and [name for name, _ in fakes.signalled] == ["claim-sick"]
