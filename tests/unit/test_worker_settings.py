"""workers.settings: flags over environment over defaults, and errors that name the flag and the variable."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

import pytest

from workers.leader_election import Timing
from workers.settings import Settings, add_arguments, markdown_table


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert (settings.task_queue, settings.registration_ttl, settings.max_cached_workflows) == (
        "nodeflow",
        timedelta(minutes=15),
        2000,
    )
    assert (settings.garbage_collection_interval, settings.garbage_collection_min_age) == (
        timedelta(minutes=2),
        timedelta(minutes=2),
    )


def test_a_flag_beats_the_environment_which_beats_the_default() -> None:
    env = {
        "NODEFLOW_GARBAGE_COLLECTION_INTERVAL": "10m",
        "NODEFLOW_GARBAGE_COLLECTION_MIN_AGE": "30s",
        "AWS_REGION": "eu-west-1",
    }
    settings = Settings.from_env(env).with_args(parse("--garbage-collection-interval", "1h"))
    assert settings.garbage_collection_interval == timedelta(hours=1)
    assert settings.garbage_collection_min_age == timedelta(seconds=30)
    assert settings.region == "eu-west-1"


def test_an_empty_variable_keeps_the_default() -> None:
    settings = Settings.from_env({"NODEFLOW_GARBAGE_COLLECTION_MIN_AGE": ""})
    assert settings.garbage_collection_min_age == timedelta(minutes=2)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"NODEFLOW_REGISTRATION_TTL": "soon"},
            r"\(flag --registration-ttl, env NODEFLOW_REGISTRATION_TTL\): invalid duration",
        ),
        ({"NODEFLOW_GARBAGE_COLLECTION_INTERVAL": "Never"}, "--garbage-collection-interval.*Never is not allowed"),
        ({"NODEFLOW_GARBAGE_COLLECTION_INTERVAL": "0s"}, "garbage_collection_interval.*at least 1s"),
        ({"NODEFLOW_GARBAGE_COLLECTION_MIN_AGE": "Never"}, "NODEFLOW_GARBAGE_COLLECTION_MIN_AGE.*Never is not allowed"),
        ({"NODEFLOW_INSTANCE_STATUS_INTERVAL": "5s"}, "--instance-status-interval.*at least 10s, or Never"),
        ({"NODEFLOW_MAX_CACHED_WORKFLOWS": "lots"}, "max_cached_workflows.*a positive whole number"),
        ({"NODEFLOW_NONSTICKY_TO_STICKY_POLL_RATIO": "2"}, "share between 0 and 1"),
        ({"NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT": "7.5"}, "--vm-memory-overhead-percent.*a fraction from 0 up to 1"),
        ({"NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT": "-0.1"}, "NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT.*such as 0.075"),
        ({"NODEFLOW_RESERVED_ENIS": "-1"}, "--reserved-enis.*0 or more"),
        ({"NODEFLOW_RESERVED_ENIS": "one"}, "NODEFLOW_RESERVED_ENIS.*whole number of ENIs"),
        ({"NODEFLOW_PREFERENCE_POLICY": "ignore"}, "--preference-policy.*'ignore': give one of Respect, Ignore"),
        ({"NODEFLOW_MIN_VALUES_POLICY": "Lax"}, "NODEFLOW_MIN_VALUES_POLICY.*give one of Strict, BestEffort"),
        ({"NODEFLOW_DISABLE_DRY_RUN": "maybe"}, "--disable-dry-run.*give true or false"),
    ],
)
def test_a_bad_setting_names_its_flag_and_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_env(env)


def test_instance_status_checks_default_to_every_minute_and_never_turns_them_off() -> None:
    assert Settings().instance_status_interval == timedelta(minutes=1)
    assert Settings.from_env({"NODEFLOW_INSTANCE_STATUS_INTERVAL": "Never"}).instance_status_interval is None


def test_prices_refresh_every_12_hours_as_karpenter_and_never_turns_the_pricing_api_off() -> None:
    settings = Settings()
    assert settings.on_demand_price_refresh_interval == timedelta(hours=12)
    assert settings.spot_price_refresh_interval == timedelta(hours=12)
    env = {"NODEFLOW_ON_DEMAND_PRICE_REFRESH_INTERVAL": "Never", "NODEFLOW_SPOT_PRICE_REFRESH_INTERVAL": "1h"}
    assert Settings.from_env(env).on_demand_price_refresh_interval is None
    assert Settings.from_env(env).spot_price_refresh_interval == timedelta(hours=1)


@pytest.mark.parametrize("name", ["on_demand_price_refresh_interval", "spot_price_refresh_interval"])
def test_price_refresh_intervals_below_a_minute_are_refused(name: str) -> None:
    flag = f"--{name.replace('_', '-')}"
    with pytest.raises(ValueError, match=f"{name} \\(flag {flag}, env NODEFLOW_{name.upper()}\\).*at least 1m"):
        Settings.from_env({f"NODEFLOW_{name.upper()}": "30s"})


def test_a_zero_min_age_is_allowed() -> None:
    assert Settings.from_env({"NODEFLOW_GARBAGE_COLLECTION_MIN_AGE": "0s"}).garbage_collection_min_age == timedelta(0)


def test_the_probe_port_defaults_to_8081_and_0_turns_it_off() -> None:
    assert Settings.from_env({}).health_probe_port == 8081
    assert Settings.from_env({"NODEFLOW_HEALTH_PROBE_PORT": "0"}).health_probe_port == 0
    assert Settings.from_env({}).with_args(parse("--health-probe-port", "9440")).health_probe_port == 9440
    with pytest.raises(
        ValueError, match=r"health_probe_port \(flag --health-probe-port, env NODEFLOW_HEALTH_PROBE_PORT\)"
    ):
        Settings.from_env({"NODEFLOW_HEALTH_PROBE_PORT": "70000"})


def test_the_metrics_ports_default_to_8080_and_8082_and_0_turns_each_off() -> None:
    assert (Settings.from_env({}).metrics_port, Settings.from_env({}).temporal_metrics_port) == (8080, 8082)
    off = Settings.from_env({"NODEFLOW_METRICS_PORT": "0", "NODEFLOW_TEMPORAL_METRICS_PORT": "0"})
    assert (off.metrics_port, off.temporal_metrics_port) == (0, 0)
    assert Settings.from_env({}).with_args(parse("--temporal-metrics-port", "9464")).temporal_metrics_port == 9464
    with pytest.raises(ValueError, match=r"metrics_port \(flag --metrics-port, env NODEFLOW_METRICS_PORT\)"):
        Settings.from_env({"NODEFLOW_METRICS_PORT": "http"})


def test_the_lease_namespace_is_the_setting_else_the_pods_else_kube_system() -> None:
    assert Settings.from_env({}).lease_namespace({}) == "kube-system"
    assert Settings.from_env({}).lease_namespace({"POD_NAMESPACE": "nodeflow"}) == "nodeflow"
    chosen = Settings.from_env({"NODEFLOW_LEADER_ELECTION_NAMESPACE": "ops"})
    assert chosen.lease_namespace({"POD_NAMESPACE": "nodeflow"}) == "ops"
    assert Settings.from_env({}).leader_election_name == "nodeflow-leader-election"


def test_leader_election_timing_defaults_to_client_gos_and_takes_shorter_values() -> None:
    assert Settings.from_env({}).leader_election_timing() == Timing(15.0, 10.0, 2.0)
    env = {"NODEFLOW_LEADER_ELECTION_LEASE_DURATION": "6s", "NODEFLOW_LEADER_ELECTION_RENEW_DEADLINE": "4s"}
    fast = Settings.from_env(env).with_args(parse("--leader-election-retry-period", "500ms"))
    assert fast.leader_election_timing() == Timing(6.0, 4.0, 0.5)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"NODEFLOW_LEADER_ELECTION_RENEW_DEADLINE": "20s"},
            r"leader_election_lease_duration \(flag --leader-election-lease-duration, .*'15s', "
            r"leader_election_renew_deadline .*'20s'.*longer than the renew deadline",
        ),
        ({"NODEFLOW_LEADER_ELECTION_RETRY_PERIOD": "9s"}, r"longer than 1.2 x the retry period"),
        ({"NODEFLOW_LEADER_ELECTION_LEASE_DURATION": "Never"}, "--leader-election-lease-duration.*Never is not"),
        ({"NODEFLOW_LEADER_ELECTION_LEASE_DURATION": "500ms"}, "leader_election_lease_duration.*at least 1s"),
    ],
)
def test_a_leader_election_timing_out_of_order_or_too_short_is_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_env(env)


def test_vm_memory_overhead_and_reserved_enis_default_to_karpenters_and_take_0() -> None:
    assert (Settings.from_env({}).vm_memory_overhead_percent, Settings.from_env({}).reserved_enis) == (0.075, 0)
    zero = Settings.from_env({"NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT": "0", "NODEFLOW_RESERVED_ENIS": "0"})
    assert (zero.vm_memory_overhead_percent, zero.reserved_enis) == (0.0, 0)
    flags = Settings.from_env({}).with_args(parse("--vm-memory-overhead-percent", "0.1", "--reserved-enis", "2"))
    assert (flags.vm_memory_overhead_percent, flags.reserved_enis) == (0.1, 2)


def test_disable_dry_run_is_off_by_default_and_the_flag_alone_turns_it_on() -> None:
    assert not Settings.from_env({}).disable_dry_run
    assert Settings.from_env({"NODEFLOW_DISABLE_DRY_RUN": "true"}).disable_dry_run
    assert Settings.from_env({}).with_args(parse("--disable-dry-run")).disable_dry_run


def test_durations_parse_as_go_durations_and_keep_fractions() -> None:
    settings = Settings.from_env({"NODEFLOW_REGISTRATION_TTL": "1h30m", "NODEFLOW_BATCH_IDLE_DURATION": "500ms"})
    assert settings.registration_ttl == timedelta(minutes=90)
    assert settings.batch_window() == (0.5, 10.0)
    assert Settings.from_env({"NODEFLOW_REGISTRATION_TTL": "Never"}).registration_ttl is None


def test_region_is_read_from_aws_region_only() -> None:
    assert Settings.from_env({"REGION": "eu-west-1", "NODEFLOW_REGION": "eu-west-2"}).region == "us-west-2"
    assert Settings.from_env({"AWS_REGION": "eu-west-1"}).region == "eu-west-1"
    assert Settings.from_env({"nodeflow_task_queue": "other"}).task_queue == "nodeflow"  # names as spelled


def test_an_unknown_setting_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^bogus: Extra inputs are not permitted$"):
        Settings(bogus="1")


def test_the_docs_table_is_the_generated_one() -> None:
    """docs/configuration.md's settings table is `python -m workers.settings --markdown`: regenerate it
    after changing a setting."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    assert markdown_table() in text, "docs/configuration.md: paste `python -m workers.settings --markdown`"
