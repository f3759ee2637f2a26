"""The AWS implementation of the cloud provider boundary.

`AWSCloudProvider` is exported lazily so that light users of this package (the built-in catalog for
`nodeflow simulate`) do not import boto3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudprovider.aws.provider import AWSCloudProvider

__all__ = ["AWSCloudProvider"]


def __getattr__(name: str) -> Any:
    if name == "AWSCloudProvider":
        from cloudprovider.aws.provider import AWSCloudProvider

        return AWSCloudProvider
    raise AttributeError(f"module 'cloudprovider.aws' has no attribute {name!r}")
