"""The embedded local stack (`nodeflow dev`): `DevStack` and its `DevStackConfig`."""

from devstack.stack.config import DevStackConfig
from devstack.stack.core import DevStack
from devstack.stack.ports import PortInUseError

__all__ = ["DevStack", "DevStackConfig", "PortInUseError"]
