"""activities.nodeclaim.sweep.ClaimSweep: one round signals `expire` to the claims past their expireAfter and
`check_drift` only to the running claims whose drift finding (any reason) differs from their Drifted
condition."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from activities.nodeclaim.expiration import expiry
from activities.nodeclaim.sweep import ClaimSweep, needs_check
from cloudprovider.errors import NodeClassNotReadyError
from cloudprovider.fake import FakeCloudProvider
from kube import resources as r
from kube.fake import MemKube, count_lists, watch_cache_of
from tests.unit.activities.claimworld import NODE_CLASS, POOL, claim_body
from tests.unit.workers.test_drift_trigger import Signals, loop  # noqa: F401 (the event loop fixture)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def running_claim(
    name: str,
    image_id: str,
    drifted: str = "",
    initialized: bool = True,
    age: timedelta = timedelta(hours=1),
    expire_after: str | None = None,
) -> dict[str, Any]:
    """A claim of the default NodePool (stamped with its template hash) created `age` before NOW."""
    claim = claim_body(image_id)
    claim["metadata"]["name"] = name
    claim["metadata"]["creationTimestamp"] = (NOW - age).isoformat().replace("+00:00", "Z")
    if expire_after is not None:
        claim["spec"]["expireAfter"] = expire_after
    conditions = [{"type": "Initialized", "status": "True" if initialized else "Unknown"}]
    if drifted:
        conditions.append({"type": "Drifted", "status": "True", "reason": drifted})
    claim["status"]["conditions"] = conditions
    return claim


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def new_sweep(kube: MemKube, signals: Signals, clock: Clock, loop: Any) -> ClaimSweep:  # noqa: F811
    return ClaimSweep(
        kube, FakeCloudProvider(), signals, loop, signals_per_second=1e6, monotonic=clock, clock=lambda: NOW
    )  # type: ignore[arg-type]


def world() -> MemKube:
    kube = MemKube()
    kube.create(r.NODEPOOL, copy.deepcopy(POOL))
    kube.create(r.EC2NODECLASS, copy.deepcopy(NODE_CLASS))  # resolves to ami-fake (the fake cloud)
    return kube


def test_only_claims_whose_finding_differs_from_their_condition_are_signalled(loop: Any) -> None:  # noqa: F811
    kube = world()
    kube.create(r.NODECLAIM, running_claim("current", "ami-fake"))
    kube.create(r.NODECLAIM, running_claim("released-behind", "ami-old"))
    kube.create(r.NODECLAIM, running_claim("already-marked", "ami-old", drifted="AMIDrift"))
    kube.create(r.NODECLAIM, running_claim("no-longer", "ami-fake", drifted="AMIDrift"))
    kube.create(r.NODECLAIM, running_claim("pool-drifted-before", "ami-fake", drifted="NodePoolDrifted"))
    kube.create(r.NODECLAIM, running_claim("launching", "ami-old", initialized=False))
    signals, clock = Signals(), Clock()
    sweep = new_sweep(kube, signals, clock, loop)

    assert sorted(sweep.sweep()) == ["no-longer", "pool-drifted-before", "released-behind"]
    assert all(signal == "check_drift" for _, signal in signals.sent)
    assert sweep.sweep() == []  # their checks have not run yet: not asked again at once
    clock.now += 3600
    assert sorted(sweep.sweep()) == ["no-longer", "pool-drifted-before", "released-behind"]  # still unsettled


def test_a_nodepool_changed_while_no_worker_led_is_found_by_the_sweep(loop: Any) -> None:  # noqa: F811
    """The watchers signal a spec change as they see it; one they never saw (made while no worker led)
    leaves the claim's template hash behind the NodePool's, which the sweep judges too."""
    kube = world()
    kube.create(r.NODECLAIM, running_claim("stale", "ami-fake"))
    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"metadata": {"labels": {"team": "b"}}}}})
    signals = Signals()
    assert new_sweep(kube, signals, Clock(), loop).sweep() == ["stale"]
    assert signals.sent == [("stale", "check_drift")]


def test_a_claim_past_its_expire_after_is_signalled_expire(loop: Any) -> None:  # noqa: F811
    kube = world()
    kube.create(r.NODECLAIM, running_claim("young", "ami-fake", age=timedelta(hours=719)))
    kube.create(r.NODECLAIM, running_claim("old", "ami-old", age=timedelta(hours=721)))
    kube.create(r.NODECLAIM, running_claim("short-lived", "ami-fake", age=timedelta(hours=2), expire_after="1h"))
    kube.create(r.NODECLAIM, running_claim("forever", "ami-fake", age=timedelta(days=900), expire_after="Never"))
    signals, clock = Signals(), Clock()
    sweep = new_sweep(kube, signals, clock, loop)

    assert sorted(sweep.sweep()) == ["old", "short-lived"]
    assert sorted(signals.sent) == [("old", "expire"), ("short-lived", "expire")]  # expiry first, not its drift
    assert sweep.sweep() == []
    with kube.as_admin():
        kube.delete(r.NODECLAIM, "old")  # its finalizer keeps it, deleting: its workflow acted
    clock.now += 3600
    assert sweep.sweep() == ["short-lived"]  # not acted on yet: asked again


def test_a_node_class_the_cloud_cannot_resolve_stops_no_other_claim(loop: Any) -> None:  # noqa: F811
    """Resolving the first claim's node class fails (the cloud answers an error): that claim's drift is not
    judged this round, and the other claims are still judged and expired."""
    kube = world()
    kube.create(r.NODECLAIM, running_claim("a-unresolved", "ami-old"))
    kube.create(r.NODECLAIM, running_claim("b-released-behind", "ami-old"))
    kube.create(r.NODECLAIM, running_claim("c-old", "ami-fake", age=timedelta(hours=721)))
    cloud = FakeCloudProvider()
    cloud.fail_next("resolve_node_class", NodeClassNotReadyError("no subnet matches the selector"))
    signals = Signals()
    sweep = ClaimSweep(kube, cloud, signals, loop, signals_per_second=1e6, monotonic=Clock(), clock=lambda: NOW)  # type: ignore[arg-type]
    assert sweep.sweep() == ["b-released-behind", "c-old"]


def test_the_leaders_sweep_reads_its_watch_cache_once_synced(loop: Any) -> None:  # noqa: F811
    kube = world()
    kube.create(r.NODECLAIM, running_claim("released-behind", "ami-old"))
    cache = watch_cache_of(kube)
    kube.create(r.NODECLAIM, running_claim("not-yet-watched", "ami-old"))  # the watch has not seen it yet
    signals, clock = Signals(), Clock()
    sweep = ClaimSweep(kube, FakeCloudProvider(), signals, loop, signals_per_second=1e6, monotonic=clock,  # type: ignore[arg-type]
                       clock=lambda: NOW, cache=cache)  # fmt: skip
    read = count_lists(kube)
    assert sweep.sweep() == ["released-behind"]
    assert read == [], "nothing listed: the cache answered"
    sweep.cache = watch_cache_of(kube, listed=())  # a new leader whose watches have not listed
    clock.now += 3600
    assert sorted(sweep.sweep()) == ["not-yet-watched", "released-behind"]
    assert "nodeclaims" in read


def test_expiry_is_creation_plus_expire_after() -> None:
    claim = running_claim("c", "ami-fake", age=timedelta(hours=3), expire_after="90m")
    assert expiry(claim) == NOW - timedelta(hours=3) + timedelta(minutes=90)
    assert expiry(running_claim("d", "ami-fake", age=timedelta(0))) == NOW + timedelta(hours=720)  # the default
    assert expiry(running_claim("e", "ami-fake", expire_after="Never")) is None
    assert expiry({"metadata": {"name": "f"}, "spec": {}}) is None  # no creationTimestamp: not judged


def test_needs_check() -> None:
    assert needs_check("", "AMIDrift")
    assert not needs_check("", "")
    assert not needs_check("AMIDrift", "AMIDrift")
    assert needs_check("AMIDrift", "")
    assert needs_check("AMIDrift", "SubnetDrift")
    assert needs_check("NodePoolDrifted", "")


def test_a_registered_claims_instance_is_named_after_its_node_unless_named_by_the_user(loop: Any) -> None:  # noqa: F811
    kube = world()
    cloud = FakeCloudProvider()
    for name, instance_name in (("mine", "mine"), ("users", "team-a-worker"), ("going", "going")):
        claim = running_claim(name, "ami-fake")
        claim["status"] |= {"providerID": f"aws:///us-west-2a/i-{name}", "nodeName": f"ip-10-0-0-{len(name)}"}
        kube.create(r.NODECLAIM, claim)
        cloud.put_running(f"i-{name}", {"Name": instance_name, "karpenter.sh/nodeclaim": name})
    with kube.as_admin():
        kube.delete(r.NODECLAIM, "going")  # being deleted: left as it is
    sweep = ClaimSweep(kube, cloud, Signals(), loop, signals_per_second=1e6, monotonic=Clock(), clock=lambda: NOW)  # type: ignore[arg-type]
    sweep.sweep()
    names = {i.id: i.tags["Name"] for i in cloud.list()}
    assert names == {"i-mine": "ip-10-0-0-4", "i-users": "team-a-worker", "i-going": "going"}
    assert sweep._name_instances(kube.list(r.NODECLAIM)) == [], "named once: the next round has nothing to do"
