"""The scheduling simulation (pure): `solve(SchedulingInput) -> Plan`."""

from scheduling.provisioning.solver import solve
from scheduling.types import Plan, SchedulingInput

__all__ = ["Plan", "SchedulingInput", "solve"]
