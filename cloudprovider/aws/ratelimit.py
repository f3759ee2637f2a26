"""Client-side token buckets that keep nodeflow's EC2 calls under EC2's own request limits.

EC2 throttles each account and region with one token bucket per API action; a call over the limit
fails with RequestLimitExceeded. Waiting here a little before sending costs less than being refused,
and leaves the workflow's retry and backoff for real pressure (another client sharing the account).

Default sizes, from "Request throttling for the Amazon EC2 API"
(https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html), request token buckets,
"bucket maximum capacity / refill rate per second", one bucket per API action:

- non-mutating actions (Describe*, List*, Search*, Get*): 100 / 20;
- the unfiltered and unpaginated calls of DescribeInstances, DescribeInstanceStatus,
  DescribeNetworkInterfaces, DescribeSecurityGroups, DescribeSnapshots, DescribeSpotInstanceRequests,
  DescribeVolumes: 50 / 10;
- mutating actions (all others, CreateFleet and CreateLaunchTemplate among them): 50 / 5;
- resource-intensive actions (AuthorizeSecurityGroupIngress, RequestSpotInstances, ...): 50 / 5;
- uncategorized actions with their own sizes, e.g. RunInstances 5 / 2, StartInstances 5 / 2,
  TerminateInstances 100 / 5, CreateTags 100 / 10 (`UNCATEGORIZED` lists those nodeflow or Karpenter
  may call, not the whole table).

The page's separate resource token buckets (instances launched or terminated: RunInstances 1000 / 2,
TerminateInstances 1000 / 20, ...) are not modelled: nodeflow launches and terminates one instance per
call, so the request buckets above bind first.

These are the defaults of one account and region; a second client in the same account (another
controller, the console) spends the same tokens, which is why EC2 may still answer RequestLimitExceeded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from cloudprovider.errors import ThrottledError

T = TypeVar("T")


@dataclass(frozen=True)
class BucketLimits:
    """A token bucket's size: it holds at most `capacity` tokens and gains `refill_per_second`."""

    capacity: float
    refill_per_second: float

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.refill_per_second <= 0:
            raise ValueError(f"BucketLimits: need capacity >= 1 and refill_per_second > 0, got {self}")


NON_MUTATING = BucketLimits(100, 20)
UNFILTERED_NON_MUTATING = BucketLimits(50, 10)
MUTATING = BucketLimits(50, 5)
RESOURCE_INTENSIVE = BucketLimits(50, 5)

NON_MUTATING_PREFIXES: tuple[str, ...] = ("Describe", "List", "Search", "Get")
# Actions that use the smaller bucket when called with neither a filter nor pagination.
UNFILTERED_ACTIONS: frozenset[str] = frozenset(
    {
        "DescribeInstances",
        "DescribeInstanceStatus",
        "DescribeNetworkInterfaces",
        "DescribeSecurityGroups",
        "DescribeSnapshots",
        "DescribeSpotInstanceRequests",
        "DescribeVolumes",
    }
)
RESOURCE_INTENSIVE_ACTIONS: frozenset[str] = frozenset(
    {
        "AcceptVpcPeeringConnection",
        "AuthorizeSecurityGroupIngress",
        "CancelSpotInstanceRequests",
        "CreateKeyPair",
        "CreateVpcPeeringConnection",
        "DeleteVpcPeeringConnection",
        "RejectVpcPeeringConnection",
        "RevokeSecurityGroupIngress",
        "RequestSpotInstances",
    }
)
UNCATEGORIZED: Mapping[str, BucketLimits] = {
    "RunInstances": BucketLimits(5, 2),
    "StartInstances": BucketLimits(5, 2),
    "TerminateInstances": BucketLimits(100, 5),
    "CreateTags": BucketLimits(100, 10),
    "DeleteTags": BucketLimits(100, 10),
    "CreateLaunchTemplateVersion": BucketLimits(100, 5),
    "ModifyLaunchTemplate": BucketLimits(100, 5),
    "CreateNetworkInterface": BucketLimits(100, 5),
    "DeleteNetworkInterface": BucketLimits(100, 5),
    "ModifyInstanceMetadataOptions": BucketLimits(100, 5),
    "AssociateIamInstanceProfile": BucketLimits(100, 5),
    "DescribeSpotFleetRequests": BucketLimits(50, 3),
}
# Request parameters that make a call filtered or paginated.
FILTER_OR_PAGE_PARAMS: frozenset[str] = frozenset({"Filters", "MaxResults", "NextToken"})


def ec2_bucket(operation: str, params: Mapping[str, Any]) -> tuple[str, BucketLimits]:
    """The bucket EC2 charges a call of `operation` with `params` to: its key and its default limits.

    The key is the operation, except for the smaller bucket of an unfiltered unpaginated call."""
    if operation in UNCATEGORIZED:
        return operation, UNCATEGORIZED[operation]
    if operation in UNFILTERED_ACTIONS and not FILTER_OR_PAGE_PARAMS & params.keys():
        return f"{operation}/unfiltered", UNFILTERED_NON_MUTATING
    if operation.startswith(NON_MUTATING_PREFIXES):
        return operation, NON_MUTATING
    if operation in RESOURCE_INTENSIVE_ACTIONS:
        return operation, RESOURCE_INTENSIVE
    return operation, MUTATING


class TokenBucket:
    """A thread-safe token bucket that starts full.

    A caller that finds it empty reserves the next token (the count goes below zero) and then sleeps
    until that token's refill time, outside the lock: callers queue in order without holding the lock
    while they sleep, and later callers wait longer."""

    def __init__(
        self,
        limits: BucketLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(limits.capacity)
        self._updated = clock()

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self.limits.capacity, self._tokens + elapsed * self.limits.refill_per_second)
        self._updated = now

    def reserve(self, max_wait: float) -> float | None:
        """Take one token, possibly not yet refilled: the seconds until it is, or None (and nothing
        taken) when that is more than `max_wait`."""
        with self._lock:
            self._refill(self._clock())
            wait = max(0.0, (1.0 - self._tokens) / self.limits.refill_per_second)
            if wait > max_wait:
                return None
            self._tokens -= 1.0
            return wait

    def acquire(self, max_wait: float) -> bool:
        """Take one token, sleeping up to `max_wait` seconds for it; False (without sleeping) if it
        would take longer."""
        wait = self.reserve(max_wait)
        if wait is None:
            return False
        if wait > 0:
            self._sleep(wait)
        return True


class EC2RateLimiter:
    """One `TokenBucket` per EC2 bucket (see `ec2_bucket`), made on first use; shared by all threads.

    `acquire` waits at most `max_wait_seconds` for a token, then raises `ThrottledError` so that the
    activity fails retryably and the workflow's backoff takes over instead of a blocked thread."""

    def __init__(
        self,
        *,
        max_wait_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        bucket_of: Callable[[str, Mapping[str, Any]], tuple[str, BucketLimits]] = ec2_bucket,
    ) -> None:
        self.max_wait_seconds = max_wait_seconds
        self._clock = clock
        self._sleep = sleep
        self._bucket_of = bucket_of
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def _bucket(self, key: str, limits: BucketLimits) -> TokenBucket:
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(limits, clock=self._clock, sleep=self._sleep)
            return bucket

    def acquire(self, operation: str, params: Mapping[str, Any]) -> None:
        """Wait for a token for one `operation` call with `params`; ThrottledError if none comes in time."""
        key, limits = self._bucket_of(operation, params)
        if not self._bucket(key, limits).acquire(self.max_wait_seconds):
            raise ThrottledError(
                f"{operation}: client-side rate limit: no token within {self.max_wait_seconds:g}s "
                f"(bucket {key}: {limits.capacity:g} tokens, {limits.refill_per_second:g}/s)"
            )


class RateLimitedClient:
    """An SDK client whose API methods take a token from `limiter` before each call.

    `operations` maps method names to operation names (a boto3 client's `meta.method_to_api_mapping`);
    other attributes (paginators, `meta`, `exceptions`) pass through unchanged. A call refused by the
    limiter raises ThrottledError without reaching the client."""

    def __init__(self, client: Any, limiter: EC2RateLimiter, operations: Mapping[str, str]) -> None:
        self._client = client
        self._limiter = limiter
        self._operations = dict(operations)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        operation = self._operations.get(name)
        if operation is None or not callable(attribute):
            return attribute
        limiter = self._limiter

        def limited(**kwargs: Any) -> Any:
            limiter.acquire(operation, kwargs)
            return attribute(**kwargs)

        return limited


def rate_limited(client: T, limiter: EC2RateLimiter) -> T:
    """`client` (a boto3 client) behind `limiter`, typed as the client it stands for."""
    operations = client.meta.method_to_api_mapping  # type: ignore[attr-defined]
    return RateLimitedClient(client, limiter, operations)  # type: ignore[return-value]
