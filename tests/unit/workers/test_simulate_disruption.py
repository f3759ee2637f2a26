"""`nodeflow simulate --disruption`: the controller's commands on a cluster in manifests, with prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scheduling.disruption import DisruptionInput
from tests.unit.workers.disruption_cluster import NOW, NOW_TEXT, documents, write_catalog, write_cluster
from workers.cli import disruption_dryrun, main
from workers.cli import simulate as simulate_cmd
from workers.cli.simulate import load_catalog


def simulate(tmp_path: Path, *extra: str, cluster: Path | None = None) -> list[str]:
    path = cluster or write_cluster(tmp_path)
    catalog = write_catalog(tmp_path)
    return ["simulate", "--disruption", "-f", str(path), "--instance-types", str(catalog), "--now", NOW_TEXT, *extra]


def test_the_commands_in_order_with_prices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(simulate(tmp_path, "-o", "json")) == 0
    out = json.loads(capsys.readouterr().out)
    steps = [(c["method"], c["action"], [x["node"] for x in c["candidates"]]) for c in out["commands"]]
    assert steps == [
        ("Emptiness", "Delete", ["ip-10-0-1-3"]),
        ("SingleNodeConsolidation", "Replace", ["ip-10-0-1-1"]),
    ]
    first, second = out["commands"]
    assert out["fleetBefore"] == {"pricePerHour": 1.248, "nodes": 5, "unpriced": []}
    assert (first["fleetPriceBefore"], first["fleetPriceAfter"]) == (1.248, 1.152)
    assert first["executedByController"] is True and second["executedByController"] is True
    replacement = second["replacements"][0]
    assert (replacement["nodePool"], replacement["instanceType"], replacement["price"]) == (
        "general",
        "c5.xlarge",
        0.17,
    )
    assert replacement["pods"] == ["default/web-0", "default/web-1"]
    assert (second["price"], second["replacementPrice"]) == (0.384, 0.17)
    assert second["fleetPriceAfter"] == pytest.approx(0.938)
    assert out["fleetAfter"]["nodes"] == 4 and out["savingsPerHour"] == pytest.approx(0.31)
    assert out["stopped"].startswith("no command") and out["errors"] == []
    why = {r["node"]: r for r in out["remaining"]}
    assert why["ip-10-0-1-2"]["code"] == "PodDoNotDisrupt" and "default/critical" in why["ip-10-0-1-2"]["message"]
    assert why["ip-10-0-1-4"]["code"] == "PodDisruptionBudget" and "default/db" in why["ip-10-0-1-4"]["message"]
    assert why["ip-10-0-2-1"]["code"] == "Budget" and 'schedule "0 9 * * mon-fri"' in why["ip-10-0-2-1"]["message"]
    replacement_codes = [r["code"] for r in out["remaining"] if r["node"] == replacement["node"]]
    assert replacement_codes == ["NotCheaper", "SplitNotCheaper"]


def test_table_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(simulate(tmp_path, "-o", "table")) == 0
    out = capsys.readouterr().out
    assert "FLEET BEFORE: 5 node(s), $1.2480/h" in out
    assert "Emptiness" in out and "$1.1520/h" in out
    assert "with one on-demand node from c5.xlarge at $0.1700/h" in out
    assert "TOTAL: $1.2480/h -> $0.9380/h (saves $0.3100/h)" in out
    assert "PodDisruptionBudget default/db allows no disruption" in out


def test_the_bound_on_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(simulate(tmp_path, "-o", "json", "--max-commands", "1")) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["commands"]) == 1 and "stopped after 1 commands" in out["stopped"]


def test_outside_the_budget_window_the_batch_node_goes_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = simulate(tmp_path, "-o", "json")
    args[args.index(NOW_TEXT)] = "2026-01-05T20:00:00Z"  # the batch budget is active 09:00-17:00; critical's 2h is over
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    disrupted = {x["node"] for c in out["commands"] for x in c["candidates"]}
    assert {"ip-10-0-1-3", "ip-10-0-1-1", "ip-10-0-2-1"} <= disrupted
    assert "ip-10-0-1-4" not in disrupted  # the PDB still blocks it


def test_invalid_objects_are_reported_and_the_rest_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = documents()
    docs.append(
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "bad"}, "spec": {"weight": 500}}
    )
    docs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "nosel"}, "spec": {}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(simulate(tmp_path, "-o", "json", cluster=path)) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert any('NodePool "bad"' in e for e in out["errors"]) and 'NodePool "bad"' in captured.err
    assert any('PodDisruptionBudget "nosel"' in e for e in out["errors"])
    assert len(out["commands"]) == 2


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--disruption"]) == 2
    assert "-f FILE or --from-cluster" in capsys.readouterr().err
    assert main(["simulate", "--from-cluster"]) == 2
    assert main(simulate(tmp_path, "--now", "yesterday")) == 2
    assert "RFC 3339" in capsys.readouterr().err


def test_from_cluster_without_a_reachable_cluster_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--disruption", "--from-cluster", "--kubeconfig", str(tmp_path / "missing"), "--instance-types",
            str(write_catalog(tmp_path))]  # fmt: skip
    assert main(args) == 2
    assert f"--kubeconfig {tmp_path / 'missing'}: no such file" in capsys.readouterr().err


def test_the_replay_leaves_its_input_alone_and_prices_what_it_cannot(tmp_path: Path) -> None:
    catalog = load_catalog(str(write_catalog(tmp_path)), "us-west-2")
    docs = documents()
    docs[3]["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "x9.unknown"  # ip-10-0-1-1's Node
    inp, errors = disruption_dryrun.input_from_manifests(docs, catalog, NOW)
    before = inp.model_dump_json()
    result = disruption_dryrun.replay(inp)
    assert inp.model_dump_json() == before and errors == []
    assert result.before.unpriced == ["ip-10-0-1-1"]
    assert isinstance(inp, DisruptionInput)


def test_the_controller_default_methods_match() -> None:
    from workflows.disruption import DisruptionSettings

    assert list(disruption_dryrun.CONTROLLER_EXECUTES) == DisruptionSettings().executable_methods


def test_from_cluster_reads_what_the_controller_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.workers.test_explain_cmd import cluster

    monkeypatch.setattr(simulate_cmd, "build_kube", lambda kubeconfig, context=None: cluster())
    assert main(simulate(tmp_path, "-o", "json")) == 0
    from_files = json.loads(capsys.readouterr().out)
    args = ["simulate", "--disruption", "--from-cluster", "--instance-types", str(write_catalog(tmp_path)),
            "--now", NOW_TEXT, "-o", "json"]  # fmt: skip
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == from_files
