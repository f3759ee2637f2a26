"""`nodeflow explain`: over the in-memory Kubernetes API, offline (the Temporal part is a stand-in)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kube.fake import MemKube
from kube.resources import BY_KIND, EVENT
from tests.unit.workers.disruption_cluster import NOW_TEXT, documents, write_catalog
from workers import cli
from workers.cli import explain as explain_cmd
from workers.settings import Settings

Obj = dict[str, Any]
DRIFT_EVENT = {
    "metadata": {"name": "general-14.1", "namespace": "default"},
    "involvedObject": {"kind": "NodeClaim", "name": "general-14"},
    "type": "Normal",
    "reason": "Drifted",
    "message": "NodePoolDrifted: the NodePool template changed",
    "lastTimestamp": "2026-01-05T11:10:00Z",
}
BLOCKED_EVENT = {
    "metadata": {"name": "ip-10-0-1-2.1", "namespace": "default"},
    "involvedObject": {"kind": "Node", "name": "ip-10-0-1-2"},
    "type": "Normal",
    "reason": "DisruptionBlocked",
    "message": "pod default/critical has do-not-disrupt",
    "count": 3,
    "lastTimestamp": "2026-01-05T11:50:00Z",
}


def cluster(docs: list[Obj] | None = None) -> MemKube:
    kube = MemKube()
    with kube.as_admin():
        for doc in docs if docs is not None else documents():
            kube.create(BY_KIND[doc["kind"]], doc, doc["metadata"].get("namespace"))
        kube.create(EVENT, DRIFT_EVENT, "default")
        kube.create(EVENT, BLOCKED_EVENT, "default")
    return kube


def unreachable(settings: Settings) -> list[str]:
    raise RuntimeError("Failed client connect: Server connection error: connection refused")


def explain(
    tmp_path: Path,
    name: str,
    *extra: str,
    kube: MemKube | None = None,
    fetch: Callable[[Settings], list[str]] = unreachable,
) -> tuple[int, str, str]:
    argv = ["explain", name, "--instance-types", str(write_catalog(tmp_path)), "--now", NOW_TEXT,
            "--temporal-address", "127.0.0.1:1", *extra]  # fmt: skip
    args = cli.build_parser(argv).parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = explain_cmd.run(args, out, err, kube=kube or cluster(), fetch=fetch)
    return code, out.getvalue(), err.getvalue()


def test_a_do_not_disrupt_pod_is_named_with_its_end(tmp_path: Path) -> None:
    code, out, err = explain(tmp_path, "ip-10-0-1-2")
    assert code == 0 and err == ""
    assert out.startswith(
        "Node ip-10-0-1-2 (NodeClaim general-12, NodePool general, m5.xlarge on-demand us-west-2a, $0.1920/h)"
    )
    assert "not disrupted now" in out
    assert (
        'PodDoNotDisrupt: pod default/critical has karpenter.sh/do-not-disrupt: "2h" until 2026-01-05 13:00:00 UTC'
        in out
    )
    assert "this pass's command: Emptiness Delete of ip-10-0-1-3" in out
    assert "event 2026-01-05T11:50:00Z Normal DisruptionBlocked (Node ip-10-0-1-2, x3)" in out


def test_a_pdb_and_the_drift_history(tmp_path: Path) -> None:
    code, out, _ = explain(tmp_path, "general-14")  # by NodeClaim name
    assert code == 0
    assert "PodDisruptionBudget default/db allows no disruption of pod default/db-0 now" in out
    assert "condition Drifted=True (NodePoolDrifted) since 2026-01-05T11:00:00Z: the NodePool template changed" in out
    assert "event 2026-01-05T11:10:00Z Normal Drifted (NodeClaim general-14)" in out
    assert "DisruptionBlocked" not in out  # another node's event


def test_the_chosen_node_says_so_with_the_command(tmp_path: Path) -> None:
    code, out, _ = explain(tmp_path, "ip-10-0-1-3", "-o", "json")
    body = json.loads(out)
    assert code == 0 and body["candidate"] is True and body["status"] == "chosen"
    assert body["command"]["method"] == "Emptiness" and body["command"]["action"] == "Delete"
    assert "disruption candidate now: this pass's command is Emptiness Delete of ip-10-0-1-3" in body["summary"]
    assert body["budgetLines"][0] == "NodePool general: 4 node(s), 0 disrupting"
    assert body["price"] == 0.096 and body["nodeClaim"] == "general-13"


def test_the_budget_of_the_pool_with_its_window(tmp_path: Path) -> None:
    code, out, _ = explain(tmp_path, "ip-10-0-2-1")
    assert code == 0
    window = 'budget #0 nodes "0" (schedule "0 9 * * mon-fri" for 8h, active 2026-01-05 09:00-2026-01-05 17:00 UTC)'
    assert "after 1 command(s) complete (Emptiness Delete of ip-10-0-1-3" in out
    assert f"[SingleNodeConsolidation] Budget: NodePool batch: {window} allows 0 more Underutilized" in out
    assert "budgets of NodePool batch (1 node(s), 0 disrupting):" in out
    assert f"  {window} allows 0 more Empty disruption(s)" in out


def test_a_node_reached_after_the_first_command_is_chosen_then(tmp_path: Path) -> None:
    code, out, _ = explain(tmp_path, "ip-10-0-1-1", "-o", "json")
    body = json.loads(out)
    assert code == 0 and body["status"] == "not-chosen"
    assert body["later"]["status"] == "chosen"
    assert body["later"]["command"]["method"] == "SingleNodeConsolidation"
    assert "c5.xlarge at $0.1700/h" in body["later"]["command"]["message"]


def test_no_cheaper_replacement_compares_the_prices(tmp_path: Path) -> None:
    docs = [d for d in documents() if d["metadata"]["name"] not in ("ip-10-0-1-3", "general-13")]
    node = next(d for d in docs if d["metadata"]["name"] == "ip-10-0-1-1")
    node["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "c5.xlarge"
    node["status"]["allocatable"] = node["status"]["capacity"] = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    code, out, _ = explain(tmp_path, "ip-10-0-1-1", kube=cluster(docs))
    assert code == 0
    assert (
        "[SingleNodeConsolidation] NotCheaper: no cheaper replacement: cheapest option c5.xlarge at $0.1700/h "
        "vs current $0.1700/h" in out
    )
    assert "this pass's command: none" in out


def test_temporal_unreachable_is_one_line_and_the_rest_is_printed(tmp_path: Path) -> None:
    code, out, _ = explain(tmp_path, "ip-10-0-1-2")
    lines = [line for line in out.splitlines() if "controller decisions" in line]
    assert code == 0 and len(lines) == 1
    assert "unavailable (Temporal at 127.0.0.1:1: RuntimeError: Failed client connect" in lines[0]
    assert "budgets of NodePool general" in out


def test_a_bad_temporal_setting_is_named_in_the_controller_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing-ca.pem"
    code, out, _ = explain(
        tmp_path,
        "ip-10-0-1-2",
        "--temporal-tls-ca-file",
        str(missing),
        fetch=explain_cmd.fetch_controller_decisions,  # the real one: the file check fails before connecting
    )
    lines = [line for line in out.splitlines() if "controller decisions" in line]
    assert code == 0 and len(lines) == 1
    setting = "temporal_tls_ca_file (flag --temporal-tls-ca-file, env NODEFLOW_TEMPORAL_TLS_CA_FILE)"
    assert f"unavailable ({setting}: {missing}: no such file)" in lines[0]


def test_the_controllers_decisions_that_mention_the_node(tmp_path: Path) -> None:
    recent = [
        "no command; rejected: {'PodDoNotDisrupt': 1}",
        "SingleNodeConsolidation Replace of general-11: decided, not executed; replace ip-10-0-1-1",
        "Emptiness Delete of general-112: executing; delete 1 empty node(s)",
    ]
    code, out, _ = explain(tmp_path, "ip-10-0-1-1", "-o", "json", fetch=lambda settings: recent)
    controller = json.loads(out)["history"]["controller"]
    assert code == 0 and controller == {"reachable": True, "decisions": [recent[1]], "error": ""}


def test_an_unknown_name_exits_1_saying_how_to_find_names(tmp_path: Path) -> None:
    code, out, err = explain(tmp_path, "ip-10-9-9-9")
    assert code == 1 and out == ""
    assert 'no Node and no NodeClaim named "ip-10-9-9-9"' in err and "kubectl get nodes" in err


def test_a_nodeclaim_without_a_node(tmp_path: Path) -> None:
    docs = [d for d in documents() if d["metadata"]["name"] != "ip-10-0-1-3"]  # general-13's Node is gone
    code, out, _ = explain(tmp_path, "general-13", kube=cluster(docs))
    assert code == 0 and "NodeClaim general-13 has no registered Node yet" in out


def test_the_flags_of_the_other_ops_commands() -> None:
    argv = ["explain", "n", "--kubeconfig", "k", "--temporal-address", "t:1", "-o", "json"]
    args = cli.build_parser(argv).parse_args(argv)
    assert (args.kubeconfig, args.temporal_address, args.output) == ("k", "t:1", "json") and callable(args.func)


def test_the_cli_path_loads_neither_temporal_nor_the_kubernetes_client() -> None:
    code = (
        "import sys, workers.cli.explain, workers.cli.simulate; "
        "print(sorted({'temporalio', 'kubernetes'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_word_boundaries() -> None:
    assert explain_cmd.mentions("replace ip-10-0-1-1 (x)", ["ip-10-0-1-1"])
    assert not explain_cmd.mentions("replace ip-10-0-1-12", ["ip-10-0-1-1"])
    assert not explain_cmd.mentions("anything", [None])


@pytest.mark.parametrize("bad", [["--now", "soon"]])
def test_bad_usage_exits_2(tmp_path: Path, bad: list[str]) -> None:
    code, _, err = explain(tmp_path, "ip-10-0-1-1", *bad)
    assert code == 2 and "RFC 3339" in err


def test_consolidate_after_says_how_long_is_left(tmp_path: Path) -> None:
    docs = documents()
    docs[0]["spec"]["disruption"]["consolidateAfter"] = "30m"  # NodePool general
    claim = next(d for d in docs if d["metadata"]["name"] == "general-11")
    claim["status"]["lastPodEventTime"] = "2026-01-05T11:50:00Z"
    code, out, _ = explain(tmp_path, "ip-10-0-1-1", kube=cluster(docs))
    assert code == 0
    assert (
        "[Consolidation] ConsolidateAfter: consolidateAfter 30m not elapsed: pods last changed at 11:50:00 UTC, "
        "20m0s left" in out
    )
