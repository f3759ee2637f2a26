"""Kubernetes resource quantities ("500m", "1.5Gi", "2", "1e3") in exact integer units.

Canonical units: `cpu` in millicores; every other resource (memory, ephemeral-storage, pods, extended
resources) in its base unit (bytes, counts). Values are rounded up, as the scheduler does.

Quantities are bounded before any arithmetic: at most MAX_MANTISSA_CHARS characters of digits, a decimal
exponent within +-MAX_EXPONENT, and a magnitude below MAX_MAGNITUDE base units (Kubernetes keeps quantities
in an int64). So "1e30000000" is rejected in microseconds instead of computing a 30-million-digit number.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Annotated

from pydantic import BeforeValidator

from apis.values.syntax import SchemaExtra

_SUFFIX: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")

ResourceList = dict[str, int]

# Karpenter's CRD pattern for a quantity (apimachinery's resource.Quantity).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


# Bounds that no real cluster comes near; they keep parsing a constant-time operation.
MAX_MANTISSA_CHARS = 40
MAX_EXPONENT = 40
MAX_MAGNITUDE = 2**63  # exclusive, in base units (cores, bytes, counts), as Kubernetes' int64


def _shown(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...{text[-10:]} ({len(text)} characters)"


def _bounded(value: Fraction, text: str) -> Fraction:
    if abs(value) >= MAX_MAGNITUDE:
        raise ValueError(
            f'quantity "{_shown(text)}" is out of range: its magnitude must be below 2^63 (about 9.2e18) '
            "base units; use a realistic value"
        )
    return value


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity, bounded as the module docstring says. Raises ValueError naming the
    accepted forms, or the bound exceeded; never does work proportional to an exponent's value."""
    if isinstance(text, bool):
        raise ValueError(f"expected a quantity such as 100, 500m or 2Gi, got {text!r}")
    if isinstance(text, int):
        return _bounded(Fraction(text), str(text))
    if isinstance(text, float):
        if not math.isfinite(text):
            raise ValueError(f'invalid quantity "{text}": use a finite number with an optional suffix, e.g. "500m"')
        return _bounded(Fraction(text), repr(text))
    return _parse_text(text)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    """parse_quantity of a string, cached: a catalog or a round parses the same few hundred strings
    thousands of times. Errors are raised again each time (lru_cache keeps results only)."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise ValueError(f'invalid quantity "{_shown(text)}": use a number with an optional suffix, e.g. "500m", "2Gi"')
    number, exponent, suffix = match.groups()
    if len(number) > MAX_MANTISSA_CHARS:
        raise ValueError(
            f'quantity "{_shown(text)}" has too many digits: at most {MAX_MANTISSA_CHARS} before the suffix or '
            'exponent; use a suffix or an exponent ("2Gi", "1e9")'
        )
    value = Fraction(number)
    if exponent:
        digits = exponent[1:].lstrip("+-").lstrip("0")
        if len(digits) > 3 or int(digits or "0") > MAX_EXPONENT:
            raise ValueError(
                f'quantity "{_shown(text)}" is out of range: the exponent must be between -{MAX_EXPONENT} and '
                f"{MAX_EXPONENT}; use a realistic value"
            )
        value *= Fraction(10) ** int(exponent[1:])
    return _bounded(value * _SUFFIX[suffix or ""], text)


@functools.lru_cache(maxsize=1 << 16)
def to_units(resource: str, text: str | int | float) -> int:
    """The quantity in canonical integer units for that resource (cpu: millicores), rounded up. Cached: the
    same few quantity strings recur across nodes, pods and scheduling simulations."""
    value = parse_quantity(text)
    if resource == "cpu":
        value *= 1000
    return math.ceil(value)


def threshold_units(resource: str, value: str, total: int) -> int:
    """A kubelet threshold of `resource` (an eviction signal's "100Mi" or "10%") in canonical units: a
    percentage of `total`, rounded up, else the quantity itself."""
    if value.endswith("%"):
        return math.ceil(total * parse_quantity(value[:-1]) / 100)
    return to_units(resource, value)


def to_resource_list(quantities: Mapping[str, str | int | float]) -> ResourceList:
    return {name: to_units(name, q) for name, q in quantities.items()}


def format_units(resource: str, units: int) -> str:
    """Canonical units back to a quantity string: cpu as millicores ("1500m" or "2"), memory-like in Mi/Gi
    when exact, else plain numbers."""
    if resource == "cpu":
        return str(units // 1000) if units % 1000 == 0 else f"{units}m"
    if resource in ("memory", "ephemeral-storage") and units:
        for suffix, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)


def format_resource_list(resources: Mapping[str, int]) -> dict[str, str]:
    return {name: format_units(name, resources[name]) for name in sorted(resources)}


def add(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0) + value
    return out


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0) - value
    return out


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """Every requested resource is available in that amount (a missing resource counts as zero)."""
    return all(value <= available.get(name, 0) for name, value in requests.items() if value > 0)


def _quantity_string(value: object) -> str:
    """Pydantic validator: accept int-or-string quantities (YAML `cpu: 100`), keep them as strings."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a quantity such as 100, 500m or 2Gi, got {value!r}")
    parse_quantity(value if isinstance(value, str) else str(value))
    return value if isinstance(value, str) else str(value)


# int-or-string on the wire (YAML `cpu: 100` or `memory: 2Gi`), a string in Python.
Quantity = Annotated[
    str,
    BeforeValidator(_quantity_string),
    SchemaExtra(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        },
        replace=True,
    ),
]
