"""activities.interruption.instance_status.InstanceStatusChecker with fakes: an impaired instance's NodeClaim
is signalled `delete` through the interruption consumer's ClaimDisrupter, once; a failed read or signal is retried at
the next check; a healthy fleet costs no NodeClaim list."""

from __future__ import annotations

import threading
from typing import Any

from activities.interruption.consumer import TERMINATING_REASON, ClaimDisrupter
from activities.interruption.instance_status import InstanceStatusChecker
from cloudprovider.unavailable import UnavailableOfferings
from kube import resources as r
from kube.fake import MemKube
from kube.types import Obj
from tests.eventually import eventually

SICK, WELL, ORPHAN = "i-00000000000000001", "i-00000000000000002", "i-00000000000000003"


def status(instance_id: str, system: str = "ok") -> dict[str, Any]:
    return {"InstanceId": instance_id, "InstanceStatus": {"Status": "ok"}, "SystemStatus": {"Status": system}}


def claim(name: str, instance_id: str, node: str) -> Obj:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "status": {"providerID": f"aws:///us-west-2a/{instance_id}", "nodeName": node},
    }


class CountingKube(MemKube):
    def __init__(self) -> None:
        super().__init__()
        self.lists = 0

    def list(self, resource: r.Resource, *args: Any, **kwargs: Any) -> list[Obj]:
        self.lists += 1
        return super().list(resource, *args, **kwargs)


class Fakes:
    def __init__(self) -> None:
        self.kube = CountingKube()
        self.kube.create(r.NODECLAIM, claim("sick", SICK, "node-sick"))
        self.kube.create(r.NODECLAIM, claim("well", WELL, "node-well"))
        self.kube.create(r.NODE, {"kind": "Node", "metadata": {"name": "node-sick"}})
        self.statuses: list[dict[str, Any]] = [status(SICK, "impaired"), status(WELL), status(ORPHAN, "impaired")]
        self.read_fails = False
        self.signal_fails = False
        self.signalled: list[tuple[str, str]] = []
        self.events: list[tuple[str, str]] = []

    def read(self) -> list[dict[str, Any]]:
        if self.read_fails:
            raise ConnectionError("EC2 unreachable")
        return self.statuses

    def signal(self, name: str, reason: str) -> bool:
        if self.signal_fails:
            raise ConnectionError("temporal unreachable")
        self.signalled.append((name, reason))
        return True

    def record(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append((f"{involved.get('kind')}/{involved['metadata']['name']}", reason))

    def checker(self) -> InstanceStatusChecker:
        disrupter = ClaimDisrupter(self.kube, self.signal, UnavailableOfferings(), self)
        return InstanceStatusChecker(self.read, disrupter, 60)


def test_an_impaired_instance_is_disrupted_once_as_a_scheduled_change() -> None:
    fakes = Fakes()
    checker = fakes.checker()
    assert checker.check() == 1
    assert [name for name, _ in fakes.signalled] == ["sick"]
    reason = fakes.signalled[0][1]
    assert reason.startswith("InstanceUnhealthy: ") and "system status check impaired" in reason
    assert sorted(fakes.events) == [
        ("Node/node-sick", "InstanceUnhealthy"),
        ("Node/node-sick", TERMINATING_REASON),
        ("NodeClaim/sick", "InstanceUnhealthy"),
        ("NodeClaim/sick", TERMINATING_REASON),
    ]
    assert checker.check() == 0 and len(fakes.signalled) == 1  # remembered: not signalled again
    assert checker.acted == 1


def test_a_healthy_fleet_lists_no_node_claims() -> None:
    fakes = Fakes()
    fakes.statuses = [status(SICK), status(WELL)]
    assert fakes.checker().check() == 0
    assert fakes.kube.lists == 0 and fakes.signalled == []


def test_a_failed_read_or_signal_is_tried_at_the_next_check() -> None:
    fakes = Fakes()
    checker = fakes.checker()
    fakes.read_fails = True
    assert checker.check() == 0
    fakes.read_fails, fakes.signal_fails = False, True
    assert checker.check() == 0 and fakes.signalled == []
    fakes.signal_fails = False
    assert checker.check() == 1 and [name for name, _ in fakes.signalled] == ["sick"]


def test_run_checks_at_once_and_stops() -> None:
    fakes = Fakes()
    checker = fakes.checker()
    stop = threading.Event()
    thread = threading.Thread(target=checker.run, args=(stop,), daemon=True)
    thread.start()
    eventually(lambda: fakes.signalled, timeout=5, interval=0.01, what="the first check")
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive() and [name for name, _ in fakes.signalled] == ["sick"]
