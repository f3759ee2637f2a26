"""workers.drift_sweep.DriftSweep: one look per EC2NodeClass signals only the running claims whose AMI (or
subnet, security groups, instance type) finding differs from their Drifted condition."""

from __future__ import annotations

import copy
from typing import Any

from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from tests.unit.activities.claimworld import NODE_CLASS
from tests.unit.activities.memkube import MemKube
from tests.unit.workers.test_drift_trigger import Signals, loop  # noqa: F401 (the event loop fixture)
from workers.drift_sweep import DriftSweep, needs_check


def running_claim(name: str, image_id: str, drifted: str = "", initialized: bool = True) -> dict[str, Any]:
    conditions = [{"type": "Initialized", "status": "True" if initialized else "Unknown"}]
    if drifted:
        conditions.append({"type": "Drifted", "status": "True", "reason": drifted})
    return {
        "metadata": {"name": name},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
        "status": {"imageID": image_id, "conditions": conditions},
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_only_claims_whose_finding_differs_from_their_condition_are_signalled(loop: Any) -> None:  # noqa: F811
    kube = MemKube()
    kube.create(r.EC2NODECLASS, copy.deepcopy(NODE_CLASS))  # resolves to ami-fake (the fake cloud)
    kube.create(r.NODECLAIM, running_claim("current", "ami-fake"))
    kube.create(r.NODECLAIM, running_claim("released-behind", "ami-old"))
    kube.create(r.NODECLAIM, running_claim("already-marked", "ami-old", drifted="AMIDrift"))
    kube.create(r.NODECLAIM, running_claim("no-longer", "ami-fake", drifted="AMIDrift"))
    kube.create(r.NODECLAIM, running_claim("pool-drifted", "ami-fake", drifted="NodePoolDrifted"))
    kube.create(r.NODECLAIM, running_claim("launching", "ami-old", initialized=False))
    signals, clock = Signals(), Clock()
    sweep = DriftSweep(kube, FakeCloudProvider(), signals, loop, signals_per_second=1e6, monotonic=clock)  # type: ignore[arg-type]

    assert sorted(sweep.sweep()) == ["no-longer", "released-behind"]
    assert all(signal == "check_drift" for _, signal in signals.sent)
    assert sweep.sweep() == []  # their checks have not run yet: not asked again at once
    clock.now += 3600
    assert sorted(sweep.sweep()) == ["no-longer", "released-behind"]  # still unsettled: asked again


def test_needs_check() -> None:
    assert needs_check("", "AMIDrift")
    assert not needs_check("", "")
    assert not needs_check("AMIDrift", "AMIDrift")
    assert needs_check("AMIDrift", "")
    assert needs_check("AMIDrift", "SubnetDrift")
    assert not needs_check("NodePoolDrifted", "")  # not the sweep's reason
