"""Smoke test of benchmarks/scale.py: its argument checks (and those of benchmarks/disruption.py, whose
stack modes take minutes, so they are not run here), and both benchmarks end to end at a tiny
size with the JSON fields benchmarks/README.md documents. No speed or memory figure is asserted here
(those are the benchmarks' own targets, reported in their JSON)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bounded_cache, disruption, disruption_stack, idle_cost, scale
from benchmarks import scheduling as scheduling_bench

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "scale.py"


def run_scripts(*argvs: list[str], timeout: float = 120.0) -> list[dict[str, object]]:
    """Run scale.py once per argv, all at once (the stacks start in parallel); each run's JSON."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for argv in argvs
    ]
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            proc.kill()
        assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {out}\nstderr: {err[-3000:]}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["--pods", "3"], "even number"),
        (["--pods", "0"], "even number"),
        (["--claims", "5"], "--claims needs --steady"),
        (["--claims", "0", "--steady"], "at least 1"),
        (["--pods", "2", "--steady"], "--steady goes with --claims"),
        (["--claims", "2", "--steady", "--concurrency", "0"], "--concurrency 0"),
        (["--pods", "2", "--claims", "2"], "not allowed with"),
        (["--claims", "2", "--steady", "--hold", "-1"], "--hold -1"),
        ([], "one of the arguments"),
        (["disruption", "--empty-nodes", "0"], "--empty-nodes 0"),
        (["disruption", "--scale-down", "--pods", "3"], "even number"),
        (["disruption", "--empty-nodes", "2", "--scale-down"], "not allowed with"),
        (["disruption", "--decision", "--empty-nodes", "2"], "not allowed with"),
        (["disruption", "--nodes", "0"], "at least 1"),
        (["disruption", "--empty-nodes", "2", "--timeout", "0"], "--timeout 0"),
        (["disruption", "--replace-wait", "0"], "--replace-wait 0"),
        (["disruption", "--replace-wait", "2", "--node-ready-delay", "-1"], "--node-ready-delay -1"),
        (["disruption", "--replace-wait", "2", "--empty-nodes", "2"], "not allowed with"),
        (["idle", "--claims", "0"], "--claims 0"),
        (["idle", "--window", "0"], "--window 0"),
        (["idle", "--days", "30"], "--days 30"),
        (["bounded", "--claims", "10", "--signals", "6"], "--signals 6: between 1 and half of --claims (5)"),
        (["bounded", "--max-cached", "0"], "--max-cached 0"),
    ],
)
def test_bad_arguments_are_refused_naming_the_flag(
    argv: list[str], wanted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """scale.py's arguments, disruption.py's when the first item is "disruption", idle_cost.py's when it
    is "idle", bounded_cache.py's when it is "bounded"."""
    script = {"disruption": disruption, "idle": idle_cost, "bounded": bounded_cache}.get(argv[0] if argv else "", scale)
    with pytest.raises(SystemExit) as exit_info:
        script.parse_args(argv[1:] if script is not scale else argv)
    assert exit_info.value.code == 2
    assert wanted in capsys.readouterr().err


def test_idle_cost_counts_billable_actions_as_temporal_cloud_defines_them() -> None:
    """Starts (also by continue-as-new), timers, upserts, signals, markers and each activity attempt
    count; workflow tasks, completions, timer firings and memo changes do not."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.api.history.v1 import HistoryEvent

    def event(kind: int, attempt: int = 0) -> HistoryEvent:
        made = HistoryEvent(event_type=kind)  # type: ignore[arg-type]
        if attempt:
            made.activity_task_started_event_attributes.attempt = attempt
        return made

    counted = [
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
        EventType.EVENT_TYPE_TIMER_STARTED,
        EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
        EventType.EVENT_TYPE_MARKER_RECORDED,
    ]
    free = [
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        EventType.EVENT_TYPE_TIMER_FIRED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,  # its new run's start counts
    ]
    assert [idle_cost.billable_actions(event(k)) for k in counted] == [1] * len(counted)
    assert [idle_cost.billable_actions(event(k)) for k in free] == [0] * len(free)
    assert idle_cost.billable_actions(event(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, attempt=3)) == 3


def test_percentile_is_nearest_rank() -> None:
    assert scale.percentile([5.0], 95) == 5.0
    assert scale.percentile([float(v) for v in range(1, 101)], 95) == 95.0
    assert scale.percentile([3.0, 1.0, 2.0], 50) == 2.0


def test_workload_has_two_deployments_of_half_the_pods() -> None:
    text = scale.workload(10)
    assert text.count("kind: Deployment") == 2
    assert text.count("replicas: 5") == 2
    assert 'cpu: "900m", memory: 3100Mi' in text and 'cpu: "3500m", memory: 28Gi' in text


def test_both_benchmarks_run_and_print_their_json(tmp_path: Path) -> None:
    claims, pods = run_scripts(
        [
            "--claims",
            "3",
            "--steady",
            "--hold",
            "2",
            "--state-dir",
            str(tmp_path / "claims"),
        ],
        ["--pods", "2", "--in-memory-temporal", "--state-dir", str(tmp_path / "pods")],
    )
    assert claims["claims"] == 3 and claims["claims_running"] == 3
    for key in ("rss_per_cached_workflow_kib", "worker_rss_mb_before", "worker_rss_mb_after", "seconds_to_steady",
                "rss_per_cached_workflow_kib_held_max"):  # fmt: skip
        assert isinstance(claims[key], float | int), key
    assert pods["pods"] == 2 and pods["pods_bound"] == 2
    assert isinstance(pods["nodes"], int) and pods["nodes"] >= 1
    for key in ("seconds_to_all_bound", "worker_rss_p95_mb", "worker_rss_max_mb", "seconds_to_first_create_fleet"):
        assert isinstance(pods[key], float | int), key
    assert len(pods["rounds_planning_claims"]) == len(pods["rounds_pods_left_by_limits"])
    assert not any(pods["rounds_pods_left_by_limits"]), "the benchmark lifts the NodePool's cpu limit"


def test_disruption_benchmark_defaults_keep_the_decision_invocation() -> None:
    args = disruption.parse_args(["--nodes", "1000", "--pods", "10000"])
    assert (args.empty_nodes, args.scale_down, args.nodes, args.pods) == (None, False, 1000, 10000)
    assert disruption.parse_args([]).pods == 10000
    assert disruption.parse_args(["--scale-down"]).pods == 1000


def test_empty_nodes_workload_gives_each_pod_its_own_node_under_a_full_budget() -> None:
    text = disruption_stack.empty_workload(7)
    assert "replicas: 7" in text and "topologyKey: kubernetes.io/hostname" in text
    assert 'budgets: [{nodes: "100%"}]' in text and "consolidateAfter: 0s" in text


def test_replace_wait_workload_gives_each_pod_its_own_node_with_consolidation_off() -> None:
    text = disruption_stack.replace_workload(3)
    assert "replicas: 3" in text and "topologyKey: kubernetes.io/hostname" in text
    assert "consolidateAfter: Never" in text and "consolidateAfter: 0s" not in text
    assert disruption_stack.EMPTY_APP not in text


def test_only_executed_commands_count() -> None:
    line = "Emptiness Delete of a, b: executing; delete 2 empty node(s); signalled a, b"
    assert disruption_stack.executed(line)
    assert not disruption_stack.executed(f"abandoned after validation: {line} -> now no command")
    assert not disruption_stack.executed("no command; rejected: none")


def test_lp_lower_bound_covers_cpu_and_memory_at_the_cheapest_mix() -> None:
    # 4 vCPU and 32 GiB from a memory type (2 vCPU, 32 GiB, $1) and a cpu type (2 vCPU, 4 GiB, $0.5): the
    # fractional optimum takes 6/7 of the first and 8/7 of the second (integral: one of each, $1.5).
    gib = 2**30
    offers = [(1.0, {"cpu": 2000, "memory": 32 * gib}), (0.5, {"cpu": 2000, "memory": 4 * gib})]
    demand = {"cpu": 4000, "memory": 32 * gib}
    assert scheduling_bench.lp_lower_bound(demand, offers) == pytest.approx(10 / 7)
    assert scheduling_bench.lp_lower_bound(demand, offers, integral=True) == pytest.approx(1.5)
