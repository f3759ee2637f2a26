"""The AWS error-code map."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from cloudprovider.aws.errors import AWSAPIError, call, fleet_error_offering, has_code, translate
from cloudprovider.errors import (
    CloudProviderError,
    InstanceNotFoundError,
    InsufficientCapacityError,
    ThrottledError,
    UnavailableOffering,
)


def client_error(code: str, status: int = 400, message: str = "details") -> ClientError:
    response = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "CreateFleet")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "status", "kind", "retryable"),
    [
        ("InsufficientInstanceCapacity", 400, InsufficientCapacityError, False),
        ("InsufficientFreeAddressesInSubnet", 400, InsufficientCapacityError, False),
        ("MaxSpotInstanceCountExceeded", 400, InsufficientCapacityError, False),
        ("UnfulfillableCapacity", 400, InsufficientCapacityError, False),
        ("VcpuLimitExceeded", 400, InsufficientCapacityError, False),
        ("RequestLimitExceeded", 503, ThrottledError, True),
        ("Throttling", 400, ThrottledError, True),
        ("InternalError", 500, AWSAPIError, True),
        ("Anything", 503, AWSAPIError, True),
        ("InvalidInstanceID.NotFound", 400, InstanceNotFoundError, False),
        ("UnauthorizedOperation", 403, AWSAPIError, False),
        ("InvalidParameterValue", 400, AWSAPIError, False),
    ],
)
def test_codes_map_to_the_error_tree(code: str, status: int, kind: type, retryable: bool) -> None:
    error = translate(client_error(code, status), "CreateFleet")
    assert type(error) is kind
    assert error.retryable is retryable
    assert code in str(error) and "CreateFleet" in str(error)


def test_auth_errors_keep_the_aws_message() -> None:
    error = translate(
        client_error("AuthFailure", 401, "AWS was not able to validate the credentials"), "DescribeSubnets"
    )
    assert "AWS was not able to validate the credentials" in str(error)


def test_connection_errors_are_retryable() -> None:
    error = translate(EndpointConnectionError(endpoint_url="http://x"), "DescribeInstances")
    assert error.retryable


def test_call_translates_and_chains() -> None:
    def boom(**_: object) -> dict[str, object]:
        raise client_error("RequestLimitExceeded", 503)

    with pytest.raises(ThrottledError) as raised:
        call("CreateFleet", boom)
    assert isinstance(raised.value.__cause__, ClientError)


def test_fleet_error_names_the_refused_offering() -> None:
    entry = {
        "LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": "m5.large", "SubnetId": "subnet-1"}},
        "Lifecycle": "spot",
        "ErrorCode": "InsufficientInstanceCapacity",
    }
    offering = fleet_error_offering(entry, {"subnet-1": "us-west-2a"}, "on-demand")
    assert offering == UnavailableOffering("m5.large", "us-west-2a", "spot", "InsufficientInstanceCapacity")


def test_generic_errors_keep_their_code_for_callers_in_the_package() -> None:
    error = translate(client_error("InvalidSubnetID.NotFound"), "DescribeSubnets")
    assert isinstance(error, CloudProviderError)
    assert has_code(error, "InvalidSubnetID.*") and not has_code(error, "InvalidAMIID.*")
    assert not has_code(ThrottledError("x"), "RequestLimitExceeded")
