"""Signal and query names are defined once, in workflows.messages: no other module writes one as a string.

The check parses every Python file of the product (and of the benchmarks and tests) and looks only at the
arguments that name a message: the first argument (or `signal=`/`query=`) of `.signal(` and `.query(`,
`start_signal=`, `name=` of `workflow.signal(`/`workflow.query(`, and the arguments of a helper whose
name says it signals or queries (`signal_workflow`, `signal_node_claim`, `signal_claim`, ...). In product
code any string literal there fails (a new message gets its member in workflows.messages); in tests and
benchmarks, which may define stand-in workflows of their own, a literal fails when it is one of the
product's names. A string "status" anywhere else (a Kubernetes field, a dict key) is not a message name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

import pytest
from temporalio import workflow

from workflows.disruption import DisruptionControllerWorkflow
from workflows.garbage_collection import GarbageCollectorWorkflow
from workflows.messages import (
    QUERIES,
    SIGNALS,
    DisruptionSignal,
    GarbageCollectorSignal,
    NodeClaimSignal,
    ProvisionerSignal,
    Query,
)
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.provisioner import ProvisionerWorkflow

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ["apis", "scheduling", "cloudprovider", "kube", "activities", "workflows", "workers", "devstack/src"]
OTHERS = ["benchmarks", "tests"]
DEFINING_MODULE = REPO / "workflows" / "messages.py"
NAMES = frozenset(str(member) for enum in (*SIGNALS, *QUERIES) for member in enum)

# The keyword that names the message, per Temporal call; a helper of ours is any callee named *signal*/*query*.
NAME_KEYWORDS = {"signal": ("signal",), "query": ("query",)}
DECORATORS = ("signal", "query")


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _is_workflow_decorator(call: ast.Call) -> bool:
    """`workflow.signal(name=...)` / `workflow.query(name=...)`."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in DECORATORS
        and isinstance(func.value, ast.Name)
        and func.value.id == "workflow"
    )


def _name_arguments(call: ast.Call) -> Iterator[tuple[ast.expr, bool]]:
    """The arguments of `call` that may name a signal or a query, each with whether it surely does (an
    argument of Temporal's API that is the name) or only may (any argument of one of our helpers)."""
    callee = _callee(call)
    for keyword in call.keywords:
        if keyword.arg == "start_signal":
            yield keyword.value, True
    if _is_workflow_decorator(call):
        yield from ((k.value, True) for k in call.keywords if k.arg == "name")
        yield from ((arg, True) for arg in call.args[:1])
    elif callee in NAME_KEYWORDS:  # handle.signal(name, ...), handle.query(name, ...)
        yield from ((arg, True) for arg in call.args[:1])
        yield from ((k.value, True) for k in call.keywords if k.arg in NAME_KEYWORDS[callee])
    elif "signal" in callee.lower() or "query" in callee.lower():  # our helpers: any argument may be the name
        yield from ((arg, False) for arg in call.args)
        yield from ((k.value, False) for k in call.keywords if k.arg != "start_signal")


def _constant_assignments(tree: ast.Module) -> Iterator[tuple[ast.expr, str]]:
    """`SIGNAL_X = "..."` / `QUERY_X = "..."`: a second definition of a name in another module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and ("SIGNAL" in target.id or "QUERY" in target.id):
                    yield node.value, target.id


def violations(source: str, strict: bool) -> list[str]:
    """Where `source` writes a message name as a string: one of the product's names in any argument that
    may name a message; with `strict` (product code) also any other literal where Temporal's API takes the
    name."""
    tree = ast.parse(source)
    found: list[str] = []

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for arg, surely in _name_arguments(node):
                text = arg.value if isinstance(arg, ast.Constant) else None
                if isinstance(text, str) and (text in NAMES or (strict and surely)):
                    found.append(f"{arg.lineno}: {_callee(node)}({text!r})")
    for constant, target in _constant_assignments(tree):
        if isinstance(constant, ast.Constant) and isinstance(constant.value, str) and constant.value in NAMES:
            found.append(f"{constant.lineno}: {target} = {constant.value!r}")
    return found


def _files(folders: list[str]) -> Iterator[Path]:
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            if ".venv" not in path.parts and "__pycache__" not in path.parts and path != DEFINING_MODULE:
                yield path


def test_no_signal_or_query_name_is_a_string_outside_workflows_messages() -> None:
    found = [
        f"{path.relative_to(REPO)}:{where}"
        for strict, folders in ((True, PRODUCT), (False, OTHERS))
        for path in _files(folders)
        for where in violations(path.read_text(encoding="utf-8"), strict)
    ]
    assert found == [], "use the members of workflows.messages:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "strict"),
    [
        ('await handle.signal("drain", "x")', False),
        ('await handle.query("status")', False),
        ('await client.start_workflow(W.run, id="w", start_signal="wake")', False),
        ('@workflow.signal(name="delete")\ndef f(self): ...', False),
        ('@workflow.query(name="anything")\ndef f(self): ...', True),
        ('await signal_workflow(wid, "replacement_ready", name)', False),
        ('await starter.signal_node_claim(name, signal="check_drift", reason="r")', False),
        ('await handle.signal("a_new_signal")', True),
        ('SIGNAL_WAKE = "wake"', False),
    ],
)
def test_the_check_finds_a_name_written_as_a_string(source: str, strict: bool) -> None:
    assert violations(source, strict) != []


@pytest.mark.parametrize(
    "source",
    [
        'obj.get("status", {})',  # a Kubernetes field
        'kube.update(r.NODEPOOL, name, mutate, subresource="status")',
        'await handle.signal(NodeClaimSignal.DRAIN, "status")',  # the reason is not a name
        'await handle.query("reasons")',  # a test's own stand-in query
        "signal.signal(signal.SIGTERM, handler)",
        'await starter.signal_node_claim(name, NodeClaimSignal.DELETE, "a reason")',
    ],
)
def test_the_check_ignores_strings_that_do_not_name_a_message(source: str) -> None:
    assert violations(source, strict=False) == []


@pytest.mark.parametrize(
    ("workflow_class", "signals"),
    [
        (NodeClaimWorkflow, NodeClaimSignal),
        (ProvisionerWorkflow, ProvisionerSignal),
        (DisruptionControllerWorkflow, DisruptionSignal),
        (GarbageCollectorWorkflow, GarbageCollectorSignal),
    ],
)
def test_each_workflow_handles_exactly_its_members(workflow_class: type, signals: type[StrEnum]) -> None:
    definition = workflow._Definition.must_from_class(workflow_class)
    assert set(definition.signals) == {str(member) for member in signals}
    assert set(definition.queries) == {str(Query.STATUS)}


def test_the_wire_names_operators_and_histories_use_are_unchanged() -> None:
    assert [str(s) for s in NodeClaimSignal] == [
        "delete",
        "node_changed",
        "drain",
        "repair",
        "expire",
        "replace",
        "check_drift",
    ]
    assert [str(s) for s in DisruptionSignal] == ["configure", "replace", "wake", "replacement_ready"]
    assert [str(s) for s in GarbageCollectorSignal] == ["collect", "configure"]
    assert [str(s) for s in ProvisionerSignal] == ["pods_pending"]
    assert [str(q) for q in Query] == ["status"]
