"""The cloud provider's error tree: every SDK error is translated into one of these at the boundary.

Nothing past `cloudprovider/` looks at an SDK error code. Activities map these to Temporal failures:
`InsufficientCapacityError` and `NodeClassNotReadyError` are non-retryable for a launch attempt (the
claim is deleted and its pods go back to the provisioner); `CloudProviderError` with `retryable=True`
(throttling, 5xx, network) is retried with backoff; `InstanceNotFoundError` is success for deletes.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class CloudProviderError(Exception):
    """Any failure from the cloud. `retryable` says whether the same call may succeed later."""

    retryable: bool = True

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable


@dataclass(frozen=True)
class UnavailableOffering:
    """One (instance type, zone, capacity type) the cloud refused for lack of capacity."""

    instance_type: str
    zone: str
    capacity_type: str
    reason: str = "InsufficientInstanceCapacity"


class InsufficientCapacityError(CloudProviderError):
    """No requested offering could be launched. `offerings` lists each refused one."""

    retryable = False

    def __init__(self, message: str, offerings: list[UnavailableOffering] | None = None) -> None:
        super().__init__(message)
        self.offerings: list[UnavailableOffering] = offerings or []


# An EC2NodeClass part's readiness as Karpenter's status conditions say it: (status, reason, message).
PartReadiness = tuple[str, str, str]


class NodeClassNotReadyError(CloudProviderError):
    """The EC2NodeClass does not resolve (no subnets, security groups or AMIs match its selectors).
    `conditions`: the readiness of each part that was looked at, by Karpenter's condition type
    (SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady), the failing ones False."""

    retryable = False

    def __init__(self, message: str, conditions: dict[str, PartReadiness] | None = None) -> None:
        super().__init__(message)
        self.conditions: dict[str, PartReadiness] = dict(conditions or {})


class InstanceNotFoundError(CloudProviderError):
    """The instance does not exist or is terminated. For deletes this is the success signal."""

    retryable = False


class ThrottledError(CloudProviderError):
    """The cloud asked us to slow down (RequestLimitExceeded); always retryable."""

    retryable = True


@dataclass
class ErrorDetails:
    """Serializable summary of an error, for activity results and events."""

    kind: str
    message: str
    offerings: list[UnavailableOffering] = field(default_factory=list)
