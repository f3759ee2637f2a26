"""Status conditions: set_condition keeps lastTransitionTime unless the status changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apis.meta import Condition, get_condition, is_true, parse_rfc3339, set_condition, with_root_condition

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def test_a_new_condition_is_appended_with_the_current_time() -> None:
    conditions = set_condition([], "Launched", "True", "Launched", "", now=T0, observed_generation=1)
    assert conditions == [
        Condition(type="Launched", status="True", reason="Launched", last_transition_time=T0, observed_generation=1)
    ]


def test_same_status_keeps_the_transition_time_but_updates_reason_and_message() -> None:
    before = set_condition([], "Ready", "False", "NotLaunched", "waiting", now=T0)
    after = set_condition(before, "Ready", "False", "NotRegistered", "still waiting", now=T1)
    (ready,) = after
    assert ready.last_transition_time == T0
    assert (ready.reason, ready.message) == ("NotRegistered", "still waiting")


def test_a_status_change_moves_the_transition_time() -> None:
    before = set_condition([], "Ready", "False", "NotLaunched", "", now=T0)
    (ready,) = set_condition(before, "Ready", "True", "Ready", "", now=T1)
    assert ready.status == "True" and ready.last_transition_time == T1


def test_order_is_kept_and_the_input_is_not_modified() -> None:
    conditions = set_condition([], "Launched", "True", "Launched", "", now=T0)
    conditions = set_condition(conditions, "Registered", "Unknown", "AwaitingRegistration", "", now=T0)
    updated = set_condition(conditions, "Launched", "False", "InsufficientCapacity", "", now=T1)
    assert [c.type for c in updated] == ["Launched", "Registered"]
    assert conditions[0].status == "True"
    assert get_condition(updated, "Launched") is not None and not is_true(updated, "Launched")
    assert get_condition(updated, "Drifted") is None


def test_a_condition_without_a_time_gets_one_when_reconfirmed() -> None:
    stale = [Condition(type="Ready", status="True")]
    (ready,) = set_condition(stale, "Ready", "True", "Ready", "", now=T1)
    assert ready.last_transition_time == T1


def test_parse_rfc3339_reads_what_kubernetes_and_ec2_write() -> None:
    assert parse_rfc3339("2026-01-05T12:00:00Z") == datetime(2026, 1, 5, 12, tzinfo=UTC)
    assert parse_rfc3339("2026-01-05T12:00:00.123456Z") == datetime(2026, 1, 5, 12, 0, 0, 123456, tzinfo=UTC)
    assert parse_rfc3339("2026-01-05T14:00:00+02:00") == datetime(2026, 1, 5, 12, tzinfo=UTC)
    assert parse_rfc3339("2026-01-05T12:00:00") == datetime(2026, 1, 5, 12, tzinfo=UTC)  # naive: UTC
    for unreadable in (None, "", "yesterday", 42):
        assert parse_rfc3339(unreadable) is None
    assert UTC == UTC and timedelta(0) == (parse_rfc3339("2026-01-05T12:00:00Z") or datetime.min).utcoffset()


def test_the_root_condition_follows_its_dependents_as_karpenters_status_library_keeps_it() -> None:
    dependents = ("Launched", "Registered", "Initialized")
    launched = set_condition([], "Launched", "True", "Launched", "", "2026-01-01T00:00:00Z")
    fresh = with_root_condition(launched, dependents, "2026-01-01T00:00:05Z")
    assert [(c.type, c.status, c.reason) for c in fresh] == [
        ("Launched", "True", "Launched"),
        ("Registered", "Unknown", "AwaitingReconciliation"),
        ("Initialized", "Unknown", "AwaitingReconciliation"),
        ("Ready", "Unknown", "ReconcilingDependents"),
    ]
    assert get_condition(fresh, "Ready").message == "Registered=Unknown, Initialized=Unknown"  # type: ignore[union-attr]
    failed = set_condition(fresh, "Registered", "False", "NodeNotFound", "", "2026-01-01T00:00:09Z")
    ready = get_condition(with_root_condition(failed, dependents, "2026-01-01T00:00:09Z"), "Ready")
    assert ready is not None and (ready.status, ready.reason) == ("False", "UnhealthyDependents")
    assert ready.message == "Registered=False, Initialized=Unknown"  # the latest changed first
    done = fresh
    for type_ in ("Registered", "Initialized"):
        done = set_condition(done, type_, "True", type_, "", "2026-01-01T00:00:20Z")
    ready = get_condition(with_root_condition(done, dependents, "2026-01-01T00:00:20Z"), "Ready")
    assert ready is not None and (ready.status, ready.reason, ready.message) == ("True", "Ready", "")
    assert ready.last_transition_time == "2026-01-01T00:00:20Z"
