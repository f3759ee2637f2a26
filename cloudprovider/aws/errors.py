"""AWS error codes -> `cloudprovider.errors`. The only place that looks at botocore exceptions.

- capacity codes (InsufficientInstanceCapacity, MaxSpotInstanceCountExceeded, ...) -> InsufficientCapacityError;
- RequestLimitExceeded / Throttling -> ThrottledError (retryable);
- HTTP 5xx, connection and timeout errors -> CloudProviderError(retryable=True);
- InvalidInstanceID.NotFound -> InstanceNotFoundError;
- everything else (auth, validation, missing parameters) -> CloudProviderError(retryable=False) carrying
  the AWS code and message, so the operator sees what to fix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, HTTPClientError, ReadTimeoutError

from cloudprovider.errors import (
    CloudProviderError,
    InstanceNotFoundError,
    InsufficientCapacityError,
    ThrottledError,
    UnavailableOffering,
)

# CreateFleet error codes that mean "this offering has no capacity now; try another" (Karpenter's list).
CAPACITY_ERROR_CODES: frozenset[str] = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientFreeAddressesInSubnet",
        "MaxSpotInstanceCountExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "VcpuLimitExceeded",
        "InsufficientCapacityOnHost",
        "ReservationCapacityExceeded",
        "SpotMaxPriceTooLow",
    }
)
THROTTLING_CODES: frozenset[str] = frozenset(
    {"RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException", "RequestThrottled"}
)
NOT_FOUND_CODES: frozenset[str] = frozenset({"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"})
SERVER_CODES: frozenset[str] = frozenset({"InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable"})

T = TypeVar("T")


class AWSAPIError(CloudProviderError):
    """A CloudProviderError that carries the AWS error code, for the few callers inside `cloudprovider.aws`
    that react to a specific code (NoSuchEntity, ParameterNotFound, ...)."""

    def __init__(self, message: str, *, code: str, retryable: bool) -> None:
        super().__init__(message, retryable=retryable)
        self.code = code


def has_code(error: CloudProviderError, *codes: str) -> bool:
    """Whether the error came from AWS with one of these codes (a trailing "*" matches a prefix)."""
    code = getattr(error, "code", "")
    return any(code == c or (c.endswith("*") and code.startswith(c[:-1])) for c in codes)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _status(error: ClientError) -> int:
    return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def is_capacity_code(code: str) -> bool:
    return code in CAPACITY_ERROR_CODES


def translate(error: Exception, operation: str) -> CloudProviderError:
    """The cloudprovider error for an SDK exception raised by `operation` (e.g. "CreateFleet")."""
    if isinstance(error, CloudProviderError):
        return error
    if isinstance(error, ClientError):
        code = error_code(error)
        message = str(error.response.get("Error", {}).get("Message", "")) or str(error)
        text = f"{operation}: {code}: {message}"
        if code in THROTTLING_CODES:
            return ThrottledError(text)
        if code in NOT_FOUND_CODES:
            return InstanceNotFoundError(text)
        if code in CAPACITY_ERROR_CODES:
            return InsufficientCapacityError(text)
        retryable = code in SERVER_CODES or _status(error) >= 500
        return AWSAPIError(text, code=code, retryable=retryable)
    if isinstance(error, ConnectionError | HTTPClientError | ReadTimeoutError):
        return CloudProviderError(f"{operation}: cannot reach AWS: {error}", retryable=True)
    if isinstance(error, BotoCoreError):
        return CloudProviderError(f"{operation}: {error}", retryable=False)
    raise error


def call(operation: str, fn: Callable[..., T], **kwargs: Any) -> T:
    """Run one SDK call, translating its errors. `operation` names it in messages."""
    try:
        return fn(**kwargs)
    except (ClientError, BotoCoreError) as error:
        raise translate(error, operation) from error


def fleet_error_offering(
    error: dict[str, Any], zone_of_subnet: dict[str, str], capacity_type: str
) -> UnavailableOffering:
    """One CreateFleet `Errors` entry as the offering it refused."""
    overrides = error.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
    zone = overrides.get("AvailabilityZone") or zone_of_subnet.get(overrides.get("SubnetId", ""), "")
    return UnavailableOffering(
        instance_type=str(overrides.get("InstanceType", "")),
        zone=str(zone),
        capacity_type=str(error.get("Lifecycle") or capacity_type),
        reason=str(error.get("ErrorCode", "")),
    )
