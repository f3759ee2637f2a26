"""The CreateFleet batcher (cloudprovider.aws.launch.fleet_batcher): windows, request shape, splitting, callers."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from cloudprovider.aws.launch.fleet_batcher import (
    FleetBatcher,
    Window,
    batch_token,
    per_claim_tags,
    shape_key,
    shared_request,
    split,
)
from cloudprovider.errors import CloudProviderError, ThrottledError


def request(claim: str, *, capacity_type: str = "on-demand", pool: str = "default") -> dict[str, Any]:
    tags = [
        {"Key": "Name", "Value": claim},
        {"Key": "karpenter.sh/nodeclaim", "Value": claim},
        {"Key": "karpenter.sh/nodepool", "Value": pool},
    ]
    return {
        "Type": "instant",
        "ClientToken": f"uid-{claim}",
        "LaunchTemplateConfigs": [{"LaunchTemplateSpecification": {"LaunchTemplateName": "lt"}, "Overrides": []}],
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity_type},
        "TagSpecifications": [{"ResourceType": r, "Tags": tags} for r in ("instance", "volume", "fleet")],
    }


class FakeEC2:
    """Answers CreateFleet with `fulfil(count)` instances (all by default) and records every call."""

    def __init__(self, fulfil: int | None = None, error: Exception | None = None) -> None:
        self.fleets: list[dict[str, Any]] = []
        self.tags: list[dict[str, Any]] = []
        self.fulfil = fulfil
        self.error = error
        self._lock = threading.Lock()
        self._next = 0

    def create_fleet(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.fleets.append(kwargs)
            if self.error is not None:
                raise self.error
            wanted = kwargs["TargetCapacitySpecification"]["TotalTargetCapacity"]
            count = wanted if self.fulfil is None else min(wanted, self.fulfil)
            ids = [f"i-{self._next + n:04d}" for n in range(count)]
            self._next += count
        errors = [] if count == wanted else [{"ErrorCode": "InsufficientInstanceCapacity", "ErrorMessage": "none"}]
        return {"Instances": [{"InstanceType": "m5.large", "InstanceIds": ids}] if ids else [], "Errors": errors}

    def create_tags(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.tags.append(kwargs)
        return {}


def launch_all(batcher: FleetBatcher, requests: list[dict[str, Any]]) -> list[Any]:
    """Every request from its own thread at once; each one's response or exception, in order."""
    start = threading.Barrier(len(requests))

    def one(req: dict[str, Any]) -> Any:
        start.wait()
        try:
            return batcher.create_fleet(req)
        except Exception as error:  # the test looks at what each caller got
            return error

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(one, requests))


def test_window_closes_when_idle_or_at_its_maximum() -> None:
    window = Window(opened=10.0, idle=0.035, maximum=1.0)
    assert window.closes_at() == pytest.approx(10.035)
    window.grew(10.03)
    assert window.closes_at() == pytest.approx(10.065)
    for t in (10.06, 10.09, 10.5, 10.99):
        window.grew(t)
    assert window.closes_at() == pytest.approx(11.0)  # joins keep coming: the maximum ends it


def test_shape_ignores_the_client_token_and_the_per_claim_tags_only() -> None:
    assert shape_key(request("a")) == shape_key(request("b"))
    assert shape_key(request("a")) != shape_key(request("a", capacity_type="spot"))
    assert shape_key(request("a")) != shape_key(request("a", pool="other"))
    assert per_claim_tags(request("a")) == [
        {"Key": "Name", "Value": "a"},
        {"Key": "karpenter.sh/nodeclaim", "Value": "a"},
    ]


def test_shared_request_sums_capacity_and_keeps_the_shared_tags() -> None:
    shared = shared_request(request("a"), 3, batch_token(["uid-b", "uid-a"]))
    assert shared["TargetCapacitySpecification"] == {"TotalTargetCapacity": 3, "DefaultTargetCapacityType": "on-demand"}
    assert shared["ClientToken"] == batch_token(["uid-a", "uid-b"])
    assert len(shared["ClientToken"]) <= 64
    assert all(
        spec["Tags"] == [{"Key": "karpenter.sh/nodepool", "Value": "default"}] for spec in shared["TagSpecifications"]
    )


def test_split_hands_out_one_instance_each_and_the_errors_to_all() -> None:
    errors = [{"ErrorCode": "InsufficientInstanceCapacity"}]
    response = {
        "Instances": [
            {"InstanceType": "m5.large", "InstanceIds": ["i-1", "i-2"]},
            {"InstanceType": "c5.large", "InstanceIds": ["i-3"]},
        ],
        "Errors": errors,
    }
    shares = split(response, 4)
    assert [s["Instances"] for s in shares] == [
        [{"InstanceType": "m5.large", "InstanceIds": ["i-1"]}],
        [{"InstanceType": "m5.large", "InstanceIds": ["i-2"]}],
        [{"InstanceType": "c5.large", "InstanceIds": ["i-3"]}],
        [],
    ]
    assert all(s["Errors"] == errors for s in shares)


def test_a_lone_request_goes_out_as_built() -> None:
    ec2 = FakeEC2()
    batcher = FleetBatcher(ec2.create_fleet, ec2.create_tags, idle_seconds=0.0)
    response = batcher.create_fleet(request("a"))
    assert ec2.fleets == [request("a")]
    assert ec2.tags == []
    assert response["Instances"][0]["InstanceIds"] == ["i-0000"]


def test_concurrent_same_shape_requests_are_one_fleet_and_each_instance_is_tagged_for_its_claim() -> None:
    ec2 = FakeEC2()
    sizes: list[tuple[int, float]] = []
    batcher = FleetBatcher(ec2.create_fleet, ec2.create_tags, idle_seconds=30, max_seconds=30, max_batch=5,
                           observe=lambda size, window: sizes.append((size, window)))  # fmt: skip
    claims = [f"c{n}" for n in range(5)]
    responses = launch_all(batcher, [request(c) for c in claims])
    assert len(ec2.fleets) == 1  # the fifth join filled the batch: no waiting for the window
    assert ec2.fleets[0]["TargetCapacitySpecification"]["TotalTargetCapacity"] == 5
    assert ec2.fleets[0]["ClientToken"] == batch_token([f"uid-{c}" for c in claims])
    ids = [r["Instances"][0]["InstanceIds"][0] for r in responses]
    assert sorted(ids) == [f"i-{n:04d}" for n in range(5)]
    tagged = {t["Resources"][0]: t["Tags"][1]["Value"] for t in ec2.tags}
    assert {tagged[i] for i in ids} == set(claims)
    assert all(tagged[i] == c for i, c in zip(ids, claims, strict=True))
    ((size, window),) = sizes
    assert size == 5 and 0 <= window < 30  # the fifth join closed the window before it ran out


def test_different_shapes_do_not_share_a_fleet() -> None:
    ec2 = FakeEC2()
    batcher = FleetBatcher(ec2.create_fleet, ec2.create_tags, idle_seconds=0.2, max_seconds=1)
    launch_all(batcher, [request("a"), request("b", capacity_type="spot")])
    assert sorted(f["TargetCapacitySpecification"]["DefaultTargetCapacityType"] for f in ec2.fleets) == [
        "on-demand",
        "spot",
    ]


def test_a_request_after_the_window_closed_opens_a_new_one() -> None:
    ec2 = FakeEC2()
    batcher = FleetBatcher(ec2.create_fleet, ec2.create_tags, idle_seconds=0.0, max_seconds=0.0)
    batcher.create_fleet(request("a"))
    batcher.create_fleet(request("b"))
    assert [f["ClientToken"] for f in ec2.fleets] == ["uid-a", "uid-b"]


def test_a_partial_fulfilment_gives_the_rest_the_fleets_errors() -> None:
    ec2 = FakeEC2(fulfil=2)
    batcher = FleetBatcher(ec2.create_fleet, ec2.create_tags, idle_seconds=30, max_seconds=30, max_batch=4)
    responses = launch_all(batcher, [request(f"c{n}") for n in range(4)])
    launched = [r for r in responses if r["Instances"]]
    refused = [r for r in responses if not r["Instances"]]
    assert len(launched) == 2 and len(refused) == 2
    assert all(r["Errors"][0]["ErrorCode"] == "InsufficientInstanceCapacity" for r in refused)
    assert len(ec2.tags) == 2


def test_a_failed_call_fails_every_caller() -> None:
    ec2 = FakeEC2(error=ThrottledError("CreateFleet: RequestLimitExceeded"))
    batcher = FleetBatcher(ec2.create_fleet, ec2.create_tags, idle_seconds=30, max_seconds=30, max_batch=3)
    outcomes = launch_all(batcher, [request(f"c{n}") for n in range(3)])
    assert len(ec2.fleets) == 1
    assert all(isinstance(o, ThrottledError) for o in outcomes)


def test_a_failed_claim_tag_fails_that_caller_only() -> None:
    ec2 = FakeEC2()

    def create_tags(**kwargs: Any) -> None:
        if kwargs["Tags"][0]["Value"] == "c1":
            raise CloudProviderError("CreateTags: InternalError", retryable=True)
        ec2.create_tags(**kwargs)

    batcher = FleetBatcher(ec2.create_fleet, create_tags, idle_seconds=30, max_seconds=30, max_batch=3)
    outcomes = launch_all(batcher, [request(f"c{n}") for n in range(3)])
    assert isinstance(outcomes[1], CloudProviderError)
    assert all(isinstance(outcomes[n], dict) for n in (0, 2))


def test_a_full_batch_closes_and_the_next_request_starts_another() -> None:
    ec2 = FakeEC2()
    batcher = FleetBatcher(ec2.create_fleet, ec2.create_tags, idle_seconds=0.5, max_seconds=1, max_batch=2)
    launch_all(batcher, [request(f"c{n}") for n in range(3)])
    sizes = sorted(f["TargetCapacitySpecification"]["TotalTargetCapacity"] for f in ec2.fleets)
    assert sizes == [1, 2]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        FleetBatcher(FakeEC2().create_fleet, FakeEC2().create_tags, max_batch=0)
