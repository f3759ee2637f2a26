"""workers.cli.ops: argument parsing, Node -> NodeClaim resolution, visibility queries and output."""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

import pytest

from kube import resources as r
from kube.errors import NotFoundError
from workers import cli
from workers.cli import ops as ops_cmd
from workers.cli.ops import ClaimRow, OpsError, format_state, format_table, resolve_claim_name, visibility_query
from workflows.nodeclaim_state import NodeClaimState


class ClaimsOnly:
    """The two Kube calls resolution makes, over a list of NodeClaims."""

    def __init__(self, claims: list[dict[str, Any]]) -> None:
        self.claims = claims

    def get(self, resource: r.Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        assert resource is r.NODECLAIM
        for claim in self.claims:
            if claim["metadata"]["name"] == name:
                return claim
        raise NotFoundError(name)

    def list(self, resource: r.Resource, **_: Any) -> list[dict[str, Any]]:
        assert resource is r.NODECLAIM
        return self.claims


def claim(name: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"nodeName": node} if node else {}}


KUBE = ClaimsOnly([claim("default-aaaaa", "ip-10-0-0-1"), claim("default-bbbbb", "ip-10-0-0-2"), claim("x")])


@pytest.mark.parametrize(
    ("given", "expected"),
    [("default-aaaaa", "default-aaaaa"), ("ip-10-0-0-2", "default-bbbbb"), ("x", "x")],
)
def test_resolves_a_claim_or_a_node_name(given: str, expected: str) -> None:
    assert resolve_claim_name(KUBE, given) == expected  # type: ignore[arg-type]


def test_an_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(OpsError, match=r'no NodeClaim named "ip-9".*status.nodeName is "ip-9".*kubectl get'):
        resolve_claim_name(KUBE, "ip-9")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pool", "phase", "query"),
    [
        (None, None, 'WorkflowType="NodeClaim" AND ExecutionStatus="Running"'),
        ("web", None, 'WorkflowType="NodeClaim" AND ExecutionStatus="Running" AND NodePool="web"'),
        (
            "web",
            "Draining",
            'WorkflowType="NodeClaim" AND ExecutionStatus="Running" AND NodePool="web" AND Phase="Draining"',
        ),
        ('we"b', None, 'WorkflowType="NodeClaim" AND ExecutionStatus="Running" AND NodePool="we\\"b"'),
    ],
)
def test_visibility_query(pool: str | None, phase: str | None, query: str) -> None:
    assert visibility_query(pool, phase) == query


def test_the_table_is_aligned_and_sorted() -> None:
    rows = [
        ClaimRow(name="b-2", node_pool="web", phase="Running", instance_type="m5.large", node_name="ip-2"),
        ClaimRow(name="a-1", node_pool="gpu", phase="Launching"),
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["NAME", "NODEPOOL", "PHASE", "INSTANCE-TYPE", "ZONE", "CAPACITY", "NODE"]
    assert lines[1].startswith("a-1 ") and lines[2].startswith("b-2 ")
    assert lines[0].index("NODEPOOL") == lines[2].index("web")


def test_one_claims_state_as_json_and_text() -> None:
    state = NodeClaimState(
        name="default-aaaaa", phase="Running", node_name="ip-1", drift_reason="AMIDrift", drift_message="old"
    )
    state.conditions["Drifted"] = "True (AMIDrift)"
    assert json.loads(format_state(state, "json"))["drift_reason"] == "AMIDrift"
    text = format_state(state, "table")
    assert text.startswith("Running: default-aaaaa")
    assert "conditions: Drifted=True (AMIDrift)" in text and "drifted: AMIDrift: old" in text


@pytest.mark.parametrize("command", ["drain", "expire", "replace", "status"])
def test_each_subcommand_parses_through_the_nodeflow_cli(command: str) -> None:
    argv = [command, "ip-10-0-0-1"] if command != "status" else [command, "-o", "json", "--phase", "Running"]
    args = cli.build_parser(argv).parse_args(argv)
    assert callable(args.func)
    if command != "status":
        assert (args.signal, args.target, args.reason) == (command, "ip-10-0-0-1", "")


def test_all_four_are_listed_when_no_command_is_given() -> None:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers(dest="command")
    ops_cmd.add_parser(subparsers)
    assert sorted(subparsers.choices) == ["drain", "expire", "replace", "status"]


def test_a_signal_for_an_unknown_node_fails_with_the_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops_cmd, "_kube", lambda settings: KUBE)
    args = cli.build_parser(["drain", "ip-404"]).parse_args(["drain", "ip-404"])
    out, err = io.StringIO(), io.StringIO()
    assert ops_cmd.run_signal(args, out, err) == 1
    assert 'no NodeClaim named "ip-404"' in err.getvalue() and out.getvalue() == ""
