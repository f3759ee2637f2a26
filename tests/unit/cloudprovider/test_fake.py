"""FakeCloudProvider keeps the CloudProvider contract."""

from __future__ import annotations

import pytest

from cloudprovider.errors import InstanceNotFoundError, InsufficientCapacityError, ThrottledError
from cloudprovider.fake import FakeCloudProvider
from cloudprovider.types import LaunchRequest
from tests.unit.cloudprovider.builders import node_class


def request(
    name: str = "default-1", types: list[str] | None = None, capacity_types: list[str] | None = None
) -> LaunchRequest:
    return LaunchRequest(
        node_claim_name=name,
        node_pool="default",
        client_token=f"uid-{name}",
        node_class=node_class(),
        instance_types=types or ["m5.large", "c5.large"],
        capacity_types=capacity_types or ["on-demand"],
    )


def test_create_picks_the_cheapest_and_adopts_on_repeat() -> None:
    cp = FakeCloudProvider()
    first = cp.create(request())
    assert (first.instance_type, first.zone, first.capacity_type) == ("c5.large", "us-west-2a", "on-demand")
    assert cp.create(request()).id == first.id
    assert cp.find_by_node_claim("default-1") == first
    assert cp.create(request(capacity_types=["spot", "on-demand"], name="default-2")).capacity_type == "spot"


def test_insufficient_capacity_everywhere_marks_offerings_unavailable() -> None:
    cp = FakeCloudProvider()
    for zone in ("us-west-2a", "us-west-2b", "us-west-2c"):
        cp.set_insufficient_capacity("c5.large", zone)
    with pytest.raises(InsufficientCapacityError) as raised:
        cp.create(request(types=["c5.large"]))
    assert len(raised.value.offerings) == 3
    c5 = next(it for it in cp.instance_types(None) if it.name == "c5.large")
    assert [o.available for o in c5.offerings if o.capacity_type == "on-demand"] == [False, False, False]


def test_delete_until_not_found_and_injected_errors() -> None:
    cp = FakeCloudProvider()
    instance = cp.create(request())
    cp.delete(instance.id)
    assert cp.list() == []
    cp.terminate_now(instance.id)
    with pytest.raises(InstanceNotFoundError):
        cp.delete(instance.id)
    cp.fail_next("get", ThrottledError("slow down"))
    with pytest.raises(ThrottledError):
        cp.get(instance.id)
