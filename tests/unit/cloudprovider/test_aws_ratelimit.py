"""The client-side EC2 token buckets: burst, refill, bounded waits, threads, and the EC2 client wrapper."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from cloudprovider.aws.factory import new_aws_cloud_provider
from cloudprovider.aws.ratelimit import (
    MUTATING,
    NON_MUTATING,
    UNFILTERED_NON_MUTATING,
    BucketLimits,
    EC2RateLimiter,
    RateLimitedClient,
    TokenBucket,
    ec2_bucket,
)
from cloudprovider.errors import ThrottledError


class FakeClock:
    """A clock whose `sleep` advances it (or only records, with advance=False)."""

    def __init__(self, *, advance: bool = True) -> None:
        self.now = 0.0
        self.advance = advance
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.advance:
            self.now += seconds


def bucket(capacity: float, rate: float, clock: FakeClock) -> TokenBucket:
    return TokenBucket(BucketLimits(capacity, rate), clock=clock, sleep=clock.sleep)


def test_a_full_bucket_serves_its_capacity_at_once_then_refuses_without_waiting() -> None:
    clock = FakeClock()
    b = bucket(3, 1, clock)
    assert [b.acquire(max_wait=0) for _ in range(4)] == [True, True, True, False]
    assert clock.sleeps == []


def test_the_bucket_refills_at_its_rate_up_to_its_capacity() -> None:
    clock = FakeClock()
    b = bucket(3, 2, clock)
    for _ in range(3):
        assert b.acquire(max_wait=0)
    clock.now += 0.5  # one token back
    assert [b.acquire(max_wait=0) for _ in range(2)] == [True, False]
    clock.now += 100  # capped at capacity
    assert [b.acquire(max_wait=0) for _ in range(4)] == [True, True, True, False]


def test_an_empty_bucket_makes_callers_wait_for_the_next_refill() -> None:
    clock = FakeClock()
    b = bucket(2, 2, clock)
    assert all(b.acquire(max_wait=5) for _ in range(5))
    assert clock.sleeps == [0.5, 0.5, 0.5]
    assert clock.now == pytest.approx(1.5)


def test_a_wait_longer_than_the_bound_raises_throttled_without_sleeping() -> None:
    clock = FakeClock(advance=False)
    limiter = EC2RateLimiter(
        max_wait_seconds=1, clock=clock, sleep=clock.sleep, bucket_of=lambda op, _: (op, BucketLimits(1, 1))
    )
    limiter.acquire("CreateFleet", {})  # the one token
    limiter.acquire("CreateFleet", {})  # the next one, 1 s away: within the bound
    with pytest.raises(ThrottledError, match="CreateFleet: client-side rate limit") as raised:
        limiter.acquire("CreateFleet", {})  # 2 s away
    assert raised.value.retryable
    assert clock.sleeps == [1.0]
    limiter.acquire("TerminateInstances", {})  # another action, another bucket


def test_threads_never_take_more_tokens_than_the_bucket_holds() -> None:
    clock = FakeClock()
    b = bucket(100, 0.001, clock)
    granted: list[bool] = []

    def worker() -> None:
        granted.extend(b.acquire(max_wait=0) for _ in range(50))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert granted.count(True) == 100 and len(granted) == 400


def test_threads_waiting_on_an_empty_bucket_each_get_their_own_refill_slot() -> None:
    clock = FakeClock(advance=False)  # nothing refills while they wait: every reservation is distinct
    b = bucket(10, 1, clock)

    def worker() -> None:
        for _ in range(5):
            assert b.acquire(max_wait=100)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(clock.sleeps) == [float(n) for n in range(1, 11)]  # 10 from the burst, then 1 s apart


@pytest.mark.parametrize(
    ("operation", "params", "expected"),
    [
        ("DescribeInstances", {"Filters": [{"Name": "tag-key", "Values": ["x"]}]}, ("DescribeInstances", NON_MUTATING)),
        ("DescribeInstances", {}, ("DescribeInstances/unfiltered", UNFILTERED_NON_MUTATING)),
        ("DescribeInstanceTypes", {}, ("DescribeInstanceTypes", NON_MUTATING)),
        ("CreateFleet", {}, ("CreateFleet", MUTATING)),
        ("CreateLaunchTemplate", {}, ("CreateLaunchTemplate", MUTATING)),
        ("TerminateInstances", {}, ("TerminateInstances", BucketLimits(100, 5))),
        ("RunInstances", {}, ("RunInstances", BucketLimits(5, 2))),
        ("DescribeSpotFleetRequests", {}, ("DescribeSpotFleetRequests", BucketLimits(50, 3))),
    ],
)
def test_ec2_bucket_follows_the_documented_categories(
    operation: str, params: Mapping[str, Any], expected: tuple[str, BucketLimits]
) -> None:
    assert ec2_bucket(operation, params) == expected


class RecordingEC2:
    """Records when each call reached "EC2"."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.sent: dict[str, list[float]] = {"CreateFleet": [], "TerminateInstances": []}
        self.meta = "meta"

    def create_fleet(self, **kwargs: Any) -> dict[str, Any]:
        self.sent["CreateFleet"].append(self.clock.now)
        return {"Instances": []}

    def terminate_instances(self, **kwargs: Any) -> dict[str, Any]:
        self.sent["TerminateInstances"].append(self.clock.now)
        return {"TerminatingInstances": []}


def test_a_burst_beyond_the_bucket_is_spread_out_at_the_refill_rate() -> None:
    clock = FakeClock()
    fake = RecordingEC2(clock)
    operations = {"create_fleet": "CreateFleet", "terminate_instances": "TerminateInstances"}
    ec2 = RateLimitedClient(fake, EC2RateLimiter(clock=clock, sleep=clock.sleep), operations)
    for _ in range(60):
        ec2.create_fleet(Type="instant")
    for _ in range(110):
        ec2.terminate_instances(InstanceIds=["i-1"])
    fleet, terminate = fake.sent["CreateFleet"], fake.sent["TerminateInstances"]
    # CreateFleet (mutating, 50 / 5 per s): 50 at once, then one every 0.2 s.
    assert fleet[:50] == [0.0] * 50
    assert fleet[50:] == pytest.approx([0.2 * n for n in range(1, 11)])
    # TerminateInstances (100 / 5 per s) has its own bucket, full when first used: 100 at once, then 0.2 s apart.
    start = fleet[-1]
    assert terminate[:100] == pytest.approx([start] * 100)
    assert terminate[100:] == pytest.approx([start + 0.2 * n for n in range(1, 11)])
    assert ec2.meta == "meta"  # not an API method: passed through


def test_the_factory_puts_ec2_and_only_ec2_behind_the_limiter() -> None:
    limiter = EC2RateLimiter()
    provider = new_aws_cloud_provider(
        "us-west-2", cluster_name="c", credentials=("testing", "testing"), ec2_limiter=limiter
    )
    ec2 = provider._ec2
    assert isinstance(ec2, RateLimitedClient) and ec2._limiter is limiter
    assert not isinstance(provider.resolver._ssm, RateLimitedClient)
