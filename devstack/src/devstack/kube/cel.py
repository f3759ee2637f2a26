"""One CEL rule of a CRD's ``x-kubernetes-validations``, evaluated with cel-python (``celpy``).

``check(rule, message, value, old)`` returns None when the rule holds (or cannot be run here) and the
problem to report when it does not: the rule's message, or, when evaluating it failed on this value
(``int("x")``, a missing map key), ``"<error> evaluating rule: <message>"`` as kube-apiserver words it.
``old`` is ``oldSelf`` (``ABSENT`` on create); the caller decides which rules run (see
``devstack.kube.validation``).

cel-python implements the CEL standard library, not the libraries Kubernetes adds. The few that
Karpenter's rules use are implemented here: ``find``/``findAll`` (regex) and ``split``/``join``/
``lowerAscii``/``upperAscii`` (strings). Missing still: ``charAt``, ``indexOf``, ``lastIndexOf``,
``replace``, ``substring``, ``trim``, the lists library (``isSorted``, ``sum``, ``min``, ``max``), and the
``url``, ``ip``/``cidr``, ``quantity``, ``format`` and ``semver`` libraries; regexes are Python's ``re``
here, RE2 in the API server (the same on the patterns CRDs use). A rule cel-python cannot parse, or that
calls a function it lacks, is logged once and skipped: the emulator accepts what it cannot check, and the
controller's own validation stays the backstop. Compiled rules are cached for the process.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any, Final

import celpy
import celpy.celtypes as ct
from celpy.adapter import json_to_cel

log = logging.getLogger(__name__)


class _Absent:
    """``oldSelf`` on a create (or where the old object has no value)."""


ABSENT: Final = _Absent()


def _find(text: Any, pattern: Any) -> ct.StringType:
    match = re.search(str(pattern), str(text))
    return ct.StringType(match.group(0) if match else "")


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> ct.ListType:
    found = [ct.StringType(m.group(0)) for m in re.finditer(str(pattern), str(text))]
    return ct.ListType(found if int(limit) < 0 else found[: int(limit)])


def _split(text: Any, separator: Any, limit: Any = -1) -> ct.ListType:
    count = int(limit)
    if count == 0:
        return ct.ListType([])
    parts = str(text).split(str(separator), count - 1 if count > 0 else -1)
    return ct.ListType([ct.StringType(p) for p in parts])


def _join(items: Any, separator: Any = "") -> ct.StringType:
    return ct.StringType(str(separator).join(str(i) for i in items))


KUBERNETES_FUNCTIONS: Final[dict[str, Any]] = {
    "find": _find,
    "findAll": _find_all,
    "split": _split,
    "join": _join,
    "lowerAscii": lambda s: ct.StringType(str(s).lower()),
    "upperAscii": lambda s: ct.StringType(str(s).upper()),
}

_UNSUPPORTED = object()  # cache value of a rule that is skipped
_programs: dict[str, Any] = {}


@functools.cache
def _environment() -> celpy.Environment:
    """cel-python's parser, built on first use (a quarter of a second)."""
    return celpy.Environment()


def _program(rule: str) -> Any:
    """The compiled rule, or _UNSUPPORTED (logged once) when cel-python cannot parse it."""
    if rule not in _programs:
        env = _environment()
        try:
            _programs[rule] = env.program(env.compile(rule), functions=KUBERNETES_FUNCTIONS)
        except Exception as error:  # any failure to compile means: skip this rule
            _skip(rule, f"cel-python cannot compile it ({error})")
    return _programs[rule]


def _skip(rule: str, why: str) -> None:
    log.warning("CEL rule skipped by the emulator: %s: %s", why, rule)
    _programs[rule] = _UNSUPPORTED


def _error_text(error: BaseException) -> str:
    first = error.args[0] if error.args else error
    return str(first)


_VERDICT_CACHE_SIZE = 4096
_verdicts: dict[tuple[str, str | None, str, str | None], str | None] = {}


def check(rule: str, message: str | None, value: Any, old: Any = ABSENT) -> str | None:
    """None when `rule` holds for `value` (``self``) and `old` (``oldSelf``), or is skipped; else the
    problem, as described in the module docstring (without a message: ``failed rule: <rule>``, and the
    rule itself after ``evaluating rule:``, as the API server words them).

    A rule is a pure function of ``self`` and ``oldSelf``, and cel-python's interpreter is slow (tens of
    milliseconds for a NodeClaim's rules), while the objects of a scale-out repeat the same values (every
    NodeClaim of a NodePool has its requirements): verdicts are remembered by the values' JSON text."""
    key = (rule, message, json.dumps(value, sort_keys=True, default=str),
           None if old is ABSENT else json.dumps(old, sort_keys=True, default=str))  # fmt: skip
    if key in _verdicts:
        return _verdicts[key]
    verdict = _evaluate(rule, message, value, old)
    if len(_verdicts) >= _VERDICT_CACHE_SIZE:
        _verdicts.clear()
    if _program(rule) is not _UNSUPPORTED:  # a rule skipped on this value is skipped from now on anyway
        _verdicts[key] = verdict
    return verdict


def _evaluate(rule: str, message: str | None, value: Any, old: Any) -> str | None:
    program = _program(rule)
    if program is _UNSUPPORTED:
        return None
    activation = {"self": json_to_cel(value)}
    if old is not ABSENT:
        activation["oldSelf"] = json_to_cel(old)
    try:
        result = program.evaluate(activation)
    except celpy.CELEvalError as error:
        text = _error_text(error)
        if text.startswith("undeclared reference"):
            _skip(rule, f"cel-python lacks a function or name it uses ({text.split(' (in activation')[0]})")
            return None
        return f"{text} evaluating rule: {message or rule}"
    except Exception as error:  # a cel-python failure must not break the emulator
        _skip(rule, f"cel-python failed evaluating it ({error!r})")
        return None
    if isinstance(result, ct.BoolType):
        return None if bool(result) else (message or f"failed rule: {rule}")
    return f"rule did not evaluate to a bool evaluating rule: {message or rule}"
