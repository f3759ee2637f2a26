"""Feature gates, as Karpenter's `--feature-gates` / `FEATURE_GATES`: `Name=true,Other=false`.

The names and defaults are Karpenter v1's (see "Feature Gates" in Karpenter's settings reference,
https://karpenter.sh/docs/reference/settings/), so the value a Karpenter install uses applies unchanged.
`SpotToSpotConsolidation` is acted on (the disruption controller may replace a spot node with a cheaper
spot node), and so are `NodeRepair` (the leader force-terminates a node unhealthy for 30 minutes,
activities.interruption.repair) and `ReservedCapacity` (the capacity reservations an EC2NodeClass selects are
offered as `reserved` capacity, cloudprovider.aws.nodeclass.capacityreservations). The others name Karpenter
features nodeflow does not have yet; turning one on is accepted and
reported at start by `not_implemented` (the worker logs it), never silently taken as done.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Karpenter v1's gates and their defaults.
DEFAULTS: Mapping[str, bool] = MappingProxyType(
    {
        "NodeRepair": False,
        "ReservedCapacity": True,
        "SpotToSpotConsolidation": False,
        "NodeOverlay": False,
        "StaticCapacity": False,
        "CapacityBuffer": False,
    }
)
IMPLEMENTED = frozenset({"SpotToSpotConsolidation", "NodeRepair", "ReservedCapacity"})
_BOOLS = {"true": True, "false": False}


def parse_feature_gates(text: str, setting: str = "feature_gates") -> dict[str, bool]:
    """Every gate's value: `text` (comma-separated `Name=true|false`, blank = none) over DEFAULTS.

    Raises ValueError naming `setting`, the offending entry and the fix: an entry without `=`, a value
    other than true/false (any case), an unknown gate (the known ones are listed), a gate given twice."""
    gates = dict(DEFAULTS)
    seen: set[str] = set()
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, raw = (s.strip() for s in entry.partition("="))
        if not sep or not name:
            raise ValueError(f"{setting}: {entry!r} is not Name=true or Name=false")
        if name not in DEFAULTS:
            raise ValueError(f"{setting}: unknown feature gate {name!r}; the gates are {', '.join(DEFAULTS)}")
        value = _BOOLS.get(raw.lower())
        if value is None:
            raise ValueError(f"{setting}: {name} is {raw!r}: give true or false")
        if name in seen:
            raise ValueError(f"{setting}: {name} is given twice")
        seen.add(name)
        gates[name] = value
    return gates


def not_implemented(gates: Mapping[str, bool]) -> list[str]:
    """The gates turned on (away from Karpenter's default off) that nodeflow does not act on, sorted."""
    return sorted(name for name, on in gates.items() if on and not DEFAULTS[name] and name not in IMPLEMENTED)
