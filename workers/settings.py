"""Worker settings: one typed model (`Settings`), flags over environment variables over defaults.

Every field is a setting; its environment variable is derived, `NODEFLOW_` and the name in capitals
(`region` alone is read from `AWS_REGION`), and its flag is the name with dashes (`--cluster-name`).
Fields are grouped by concern (`concern(name)`); durations are `timedelta`, parsed from Go durations
("30s", "1h30m", and "Never", as None, where a setting allows it). A bad value is a ValueError of one
line naming the setting, its flag and its variable (`where`). The settings table of
docs/configuration.md is generated from the model (`python -m workers.settings --markdown`); what each
setting means is told there.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Annotated, Any, get_args

from pydantic import BeforeValidator, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

from apis.values.duration import NEVER, parse_duration
from cloudprovider.aws.instancetypes.translate import DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
from scheduling.disruption.model import METHOD_ORDER
from scheduling.types import MinValuesPolicy, PreferencePolicy, SchedulingPolicies
from workers.feature_gates import parse_feature_gates
from workers.leader_election import JITTER_FACTOR, Timing

# The disruption methods, in the order the controller tries them (scheduling.disruption.decide).
DISRUPTION_METHODS: tuple[str, ...] = METHOD_ORDER
ENV_PREFIX = "NODEFLOW_"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def env_name(name: str) -> str:
    """The environment variable of setting `name`: NODEFLOW_<NAME>, or the field's own alias (AWS_REGION)."""
    alias = Settings.model_fields[name].validation_alias
    return alias if isinstance(alias, str) else f"{ENV_PREFIX}{name.upper()}"


def flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def where(name: str) -> str:
    """A setting as the user can give it: `name (flag --name, env NODEFLOW_NAME)`."""
    return f"{name} (flag {flag(name)}, env {env_name(name)})"


def duration_text(value: timedelta | None) -> str:
    """A duration as a Go duration in its shortest form ("15m", "1h30m", "500ms"); None is "Never"."""
    if value is None:
        return NEVER
    millis = round(value.total_seconds() * 1000)
    parts = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


# -- the kinds of value, each checked with a message naming the setting -------------------------------------


def _duration(*, never: bool = False, at_least: float = 0, advice: str = "") -> BeforeValidator:
    """A Go duration: Never (None) only when `never`; at least `at_least` seconds, else `advice`."""

    def check(value: object, info: ValidationInfo) -> timedelta | None:
        name = str(info.field_name)
        if isinstance(value, timedelta) or value is None:
            parsed, value = value, duration_text(value)
        else:
            try:
                parsed = parse_duration(str(value))
            except ValueError as err:
                raise ValueError(f"{where(name)}: {err}") from None
        if parsed is None and not never:
            raise ValueError(f"{where(name)} is {value!r}: give a duration such as 2m (Never is not allowed here)")
        if parsed is not None and parsed.total_seconds() < at_least:
            raise ValueError(f"{where(name)} is {value!r}: {advice}")
        return parsed

    return BeforeValidator(check)


def _flag(value: object, info: ValidationInfo) -> bool | None:
    """A bool, or true/false text from a flag or the environment; None stays None (temporal_tls: unset)."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in _TRUE + _FALSE:
        raise ValueError(f"{where(str(info.field_name))} is {value!r}: give true or false")
    return text in _TRUE


def _positive(kind: type[int] | type[float]) -> BeforeValidator:
    def check(value: object, info: ValidationInfo) -> float:
        try:
            number: float = kind(str(value).strip())
        except ValueError:
            number = 0
        if number <= 0:
            wanted = "a positive whole number" if kind is int else "a positive number"
            raise ValueError(f"{where(str(info.field_name))} is {value!r}: give {wanted}")
        return number

    return BeforeValidator(check)


def _bounded(kind: type[int] | type[float], below: float | None, advice: str) -> BeforeValidator:
    """A number from 0 up to `below` (excluded; None: no bound), else `advice`."""

    def check(value: object, info: ValidationInfo) -> float:
        try:
            number: float = kind(str(value).strip())
        except ValueError:
            raise ValueError(f"{where(str(info.field_name))} is {value!r}: {advice}") from None
        if number < 0 or (below is not None and number >= below):
            raise ValueError(f"{where(str(info.field_name))} is {value!r}: {advice}")
        return number

    return BeforeValidator(check)


def _port(value: object, info: ValidationInfo) -> int:
    try:
        port = int(str(value).strip())
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ValueError(f"{where(str(info.field_name))} is {value!r}: give a port 1-65535, or 0 for none")
    return port


def _one_of(choices: Any) -> BeforeValidator:
    allowed: tuple[str, ...] = get_args(choices)

    def check(value: object, info: ValidationInfo) -> object:
        name = str(info.field_name)
        if value not in allowed:
            raise ValueError(f"{where(name)} is {value!r}: give one of {', '.join(allowed)} (Karpenter's {flag(name)})")
        return value

    return BeforeValidator(check)


Flag = Annotated[bool, BeforeValidator(_flag)]
Port = Annotated[int, BeforeValidator(_port)]  # 0: the server is off
PositiveInt = Annotated[int, _positive(int)]
PositiveFloat = Annotated[float, _positive(float)]
FiniteDuration = Annotated[timedelta, _duration()]
Interval = Annotated[timedelta, _duration(at_least=1, advice="give at least 1s")]
PriceInterval = Annotated[
    timedelta | None, _duration(never=True, at_least=60, advice="give at least 1m (Karpenter's is 12h), or Never")
]


def _in(group: str) -> Callable[..., Any]:
    """The field maker of one concern: `default`, and `shown`, the default as the docs' table tells it."""

    def setting(default: Any, shown: str | None = None, **kwargs: Any) -> Any:
        return Field(default, json_schema_extra={"concern": group, "shown": shown}, **kwargs)

    return setting


TEMPORAL = _in("Temporal connection")
TUNING = _in("Worker tuning")
CLUSTER = _in("Kubernetes and AWS")
PROVISIONING = _in("Provisioning")
INSTANCE_TYPES = _in("Instance types and prices")
DISRUPTION = _in("Disruption, expiry and interruption")
GARBAGE = _in("Garbage collection")
LEADERSHIP = _in("Leader election and health")
METRICS = _in("Metrics")


class Settings(BaseSettings):
    """Every setting of the worker, grouped by concern; see docs/configuration.md for what each means."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_ignore_empty=True, frozen=True, extra="forbid", validate_by_name=True
    )

    # Temporal connection (workers.temporal.client): TLS on when set, else exactly when a TLS file or an API key is.
    temporal_address: str = TEMPORAL("127.0.0.1:7233")
    temporal_namespace: str = TEMPORAL("default")
    temporal_tls: Annotated[bool | None, BeforeValidator(_flag)] = TEMPORAL(
        None, "off; on when a TLS file or an API key is given"
    )
    temporal_tls_ca_file: str | None = TEMPORAL(None, "none (the system's roots)")
    temporal_tls_cert_file: str | None = TEMPORAL(None, "none (no client certificate)")
    temporal_tls_key_file: str | None = TEMPORAL(None, "none (give it with the certificate)")
    temporal_tls_server_name: str | None = TEMPORAL(None, "none (the address's host)")
    temporal_api_key: str | None = TEMPORAL(None, "none (never logged)", repr=False)
    task_queue: str = TEMPORAL("nodeflow")

    # Worker tuning (the Temporal SDK's worker options).
    max_cached_workflows: PositiveInt = TUNING(2000)
    max_concurrent_workflow_tasks: PositiveInt = TUNING(100)
    max_concurrent_workflow_task_polls: PositiveInt = TUNING(5)
    nonsticky_to_sticky_poll_ratio: PositiveFloat = TUNING(0.2)

    # The cluster: its Kubernetes API, its AWS account and region, what goes into its nodes' user data.
    kubeconfig: str | None = CLUSTER(None, "none (the in-cluster config)")
    aws_endpoint_url: str | None = CLUSTER(None, "none (real AWS)")
    region: str = CLUSTER("us-west-2", validation_alias="AWS_REGION")
    cluster_name: str = CLUSTER("nodeflow-dev")
    cluster_endpoint: str = CLUSTER("", '"" (from eks:DescribeCluster)')
    cluster_ca_bundle: str = CLUSTER("", '"" (from eks:DescribeCluster)')
    cluster_service_cidr: str = CLUSTER("", '"" (from eks:DescribeCluster)')
    kubernetes_version: str = CLUSTER("1.32")
    disable_dry_run: Flag = CLUSTER(False)

    # Provisioning: the batch window of pending pods, the policies of the plan, a launched node's deadline.
    batch_idle_duration: FiniteDuration = PROVISIONING(timedelta(seconds=1))
    batch_max_duration: FiniteDuration = PROVISIONING(timedelta(seconds=10))
    preference_policy: Annotated[PreferencePolicy, _one_of(PreferencePolicy)] = PROVISIONING("Respect")
    min_values_policy: Annotated[MinValuesPolicy, _one_of(MinValuesPolicy)] = PROVISIONING("Strict")
    registration_ttl: Annotated[timedelta | None, _duration(never=True)] = PROVISIONING(timedelta(minutes=15))

    # Instance types (Karpenter's --vm-memory-overhead-percent and --reserved-enis) and their prices.
    vm_memory_overhead_percent: Annotated[
        float, _bounded(float, 1.0, "give a fraction from 0 up to 1, such as 0.075 (Karpenter's default)")
    ] = INSTANCE_TYPES(DEFAULT_VM_MEMORY_OVERHEAD_PERCENT)
    reserved_enis: Annotated[int, _bounded(int, None, "give a whole number of ENIs, 0 or more")] = INSTANCE_TYPES(0)
    on_demand_price_refresh_interval: PriceInterval = INSTANCE_TYPES(
        timedelta(hours=12), "12h (Never = the shipped table only)"
    )
    spot_price_refresh_interval: PriceInterval = INSTANCE_TYPES(timedelta(hours=12), "12h (Never = read once)")

    # Disruption: what the controller executes, Karpenter's feature gates, expiry and drift, interruption.
    disruption_methods: str = DISRUPTION(",".join(DISRUPTION_METHODS), "all five methods, in order (below)")
    feature_gates: str = DISRUPTION("", "Karpenter's defaults")
    claim_sweep_interval: Interval = DISRUPTION(timedelta(minutes=1))
    interruption_queue: str = DISRUPTION("", '"" (no interruption handling)')
    instance_status_interval: Annotated[
        timedelta | None,
        _duration(never=True, at_least=10, advice="give at least 10s, or Never to turn the checks off"),
    ] = DISRUPTION(timedelta(minutes=1), "1m (Never = no status checks)")

    # Garbage collection of instances whose NodeClaim is gone.
    garbage_collection_interval: Interval = GARBAGE(timedelta(minutes=2))
    garbage_collection_min_age: FiniteDuration = GARBAGE(timedelta(minutes=2))

    # Leader election (client-go's Lease timing) and the health probes.
    leader_election_name: str = LEADERSHIP("nodeflow-leader-election")
    leader_election_namespace: str = LEADERSHIP("", '"" (POD_NAMESPACE, else kube-system)')
    leader_election_lease_duration: Annotated[
        timedelta, _duration(at_least=1, advice="give at least 1s (client-go's is 15s)")
    ] = LEADERSHIP(timedelta(seconds=15))
    leader_election_renew_deadline: FiniteDuration = LEADERSHIP(timedelta(seconds=10))
    leader_election_retry_period: FiniteDuration = LEADERSHIP(timedelta(seconds=2))
    health_probe_port: Port = LEADERSHIP(8081, "8081 (0 = no probe server)")

    # Metrics endpoints.
    metrics_port: Port = METRICS(8080, "8080 (0 = no metrics endpoint)")
    temporal_metrics_port: Port = METRICS(8082, "8082 (0 = no Temporal SDK metrics endpoint)")

    def __init__(self, **values: Any) -> None:
        """The settings `values` give over the defaults (no environment: see from_env); a ValueError of one
        line naming the first bad setting's flag and variable."""
        try:
            super().__init__(**values)
        except ValidationError as err:
            raise ValueError(_first_problem(err)) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values given: the environment is read by from_env, from the mapping it is given."""
        return (init_settings,)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings the environment (`env`, else the process's) gives over the defaults; an empty
        variable keeps the default."""
        return cls(**_Environment(cls, os.environ if env is None else env)())

    def with_args(self, args: argparse.Namespace) -> Settings:
        """These settings with the flags given in `args` over them."""
        return self.with_values(
            **{name: getattr(args, name) for name in type(self).model_fields if getattr(args, name, None) is not None}
        )

    def with_values(self, **changes: Any) -> Settings:
        """These settings with `changes` over them, checked as any other."""
        given = {name: getattr(self, name) for name in self.model_fields_set}
        return type(self)(**{**given, **changes})

    @field_validator("disruption_methods")
    @classmethod
    def _known_methods(cls, value: str) -> str:
        unknown = [m for m in _methods(value) if m not in DISRUPTION_METHODS]
        if unknown:
            raise ValueError(
                f"{where('disruption_methods')}: unknown {', '.join(unknown)}; give a comma-separated subset of "
                f"{','.join(DISRUPTION_METHODS)}"
            )
        return value

    @field_validator("feature_gates")
    @classmethod
    def _known_gates(cls, value: str) -> str:
        parse_feature_gates(value, where("feature_gates"))  # refuses a malformed value now, not when leading
        return value

    @field_validator("nonsticky_to_sticky_poll_ratio")
    @classmethod
    def _a_share(cls, value: float) -> float:
        if value > 1:
            raise ValueError(f"{where('nonsticky_to_sticky_poll_ratio')} is {value}: give a share between 0 and 1")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        _check_temporal_tls(self)
        self.batch_window()
        self.leader_election_timing()
        return self

    def scheduling_policies(self) -> SchedulingPolicies:
        return SchedulingPolicies(self.preference_policy, self.min_values_policy)

    def temporal_tls_enabled(self) -> bool:
        """Whether the Temporal connection uses TLS: as set, else on when a TLS file or an API key is given."""
        if self.temporal_tls is not None:
            return self.temporal_tls
        return bool(self.temporal_api_key) or any(_tls_files(self).values())

    def lease_namespace(self, env: Mapping[str, str] | None = None) -> str:
        """The namespace of the leader-election Lease: the setting, else POD_NAMESPACE, else kube-system."""
        env = os.environ if env is None else env
        return self.leader_election_namespace or env.get("POD_NAMESPACE") or "kube-system"

    def feature_gate_values(self) -> dict[str, bool]:
        """Every feature gate's value (workers.feature_gates): the setting over Karpenter's defaults."""
        return parse_feature_gates(self.feature_gates, where("feature_gates"))

    def leader_election_timing(self) -> Timing:
        """The three `leader_election_*` durations as a Timing; a ValueError naming the settings when
        they are not lease duration > renew deadline > 1.2 x retry period."""
        durations = {
            "leader_election_lease_duration": self.leader_election_lease_duration,
            "leader_election_renew_deadline": self.leader_election_renew_deadline,
            "leader_election_retry_period": self.leader_election_retry_period,
        }
        lease, renew, retry = (d.total_seconds() for d in durations.values())
        try:
            return Timing(lease_duration=lease, renew_deadline=renew, retry_period=retry)
        except ValueError:
            names = ", ".join(f"{where(n)} {duration_text(d)!r}" for n, d in durations.items())
            raise ValueError(
                f"{names}: give a lease duration longer than the renew deadline, and a renew deadline longer than "
                f"{JITTER_FACTOR} x the retry period (client-go's defaults are 15s, 10s, 2s)"
            ) from None

    def batch_window(self) -> tuple[float, float]:
        """(idle, max) seconds of the provisioning batch window; a ValueError naming both settings when
        the idle duration is zero or longer than the max."""
        idle, longest = self.batch_idle_duration.total_seconds(), self.batch_max_duration.total_seconds()
        if not 0 < idle <= longest:
            names = ", ".join(
                f"{where(n)} {duration_text(getattr(self, n))!r}" for n in ("batch_idle_duration", "batch_max_duration")
            )
            raise ValueError(
                f"{names}: give an idle duration above 0s and no longer than the max (Karpenter's: 1s, 10s)"
            )
        return idle, longest

    def disruption_method_list(self) -> list[str]:
        return _methods(self.disruption_methods)


def whole_seconds(value: timedelta) -> int:
    """A duration in whole seconds (what the workflows' settings and the loops' intervals take)."""
    return int(value.total_seconds())


def optional_seconds(value: timedelta | None) -> int | None:
    """A duration that may be Never in whole seconds; None for Never."""
    return None if value is None else whole_seconds(value)


def _methods(text: str) -> list[str]:
    return [m.strip() for m in text.split(",") if m.strip()]


def _tls_files(settings: Settings) -> dict[str, str | None]:
    return {
        "temporal_tls_ca_file": settings.temporal_tls_ca_file,
        "temporal_tls_cert_file": settings.temporal_tls_cert_file,
        "temporal_tls_key_file": settings.temporal_tls_key_file,
    }


def _check_temporal_tls(settings: Settings) -> None:
    """A ValueError naming the setting for false with a TLS file, and for a certificate without its key
    or a key without its certificate. The files themselves are read when connecting."""
    given = [name for name, value in _tls_files(settings).items() if value]
    if settings.temporal_tls is False and given:
        raise ValueError(f"{where('temporal_tls')} is false but {where(given[0])} is set: drop one of them")
    cert, key = settings.temporal_tls_cert_file, settings.temporal_tls_key_file
    if bool(cert) != bool(key):
        missing = "temporal_tls_key_file" if cert else "temporal_tls_cert_file"
        raise ValueError(f"{where(missing)} is not set: a client certificate and its key come together")


def _first_problem(err: ValidationError) -> str:
    """The message of the first setting refused: our own ValueError's text, else pydantic's, named."""
    first = err.errors()[0]
    problem = first.get("ctx", {}).get("error")
    if isinstance(problem, ValueError):
        return str(problem)
    name = ".".join(str(part) for part in first["loc"])
    if name in Settings.model_fields:
        return f"{where(name)}: {first['msg']}"
    return f"{name}: {first['msg']}"


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source (derived names, empty values ignored) over a given mapping."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._given = env
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        """Only the variables env_name names, spelled exactly so (not NODEFLOW_REGION, which pydantic-settings
        would also try for the aliased field, nor a lower-case spelling)."""
        names = {env_name(name) for name in Settings.model_fields}
        given = {key: value for key, value in self._given.items() if key in names}
        return parse_env_vars(given, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for every setting (`--temporal-address`, `--cluster-name`, ...); unset flags keep env/defaults."""
    for name in Settings.model_fields:
        if name in ("temporal_tls", "disable_dry_run"):  # the flag alone means true; `false` also works
            parser.add_argument(flag(name), dest=name, default=None, nargs="?", const="true")
            continue
        parser.add_argument(flag(name), dest=name, default=None)


# -- the settings table of docs/configuration.md ------------------------------------------------------------

TABLE_START = "<!-- settings table: generated by `python -m workers.settings --markdown`; do not edit -->"
TABLE_END = "<!-- end of the generated settings table -->"


def concern(name: str) -> str:
    extra = Settings.model_fields[name].json_schema_extra
    assert isinstance(extra, dict), name
    return str(extra["concern"])


def _shown_default(name: str) -> str:
    field = Settings.model_fields[name]
    extra = field.json_schema_extra
    assert isinstance(extra, dict), name
    if extra.get("shown"):
        return str(extra["shown"])
    default = field.default
    if isinstance(default, timedelta):
        return duration_text(default)
    if isinstance(default, bool):
        return str(default).lower()
    return "none" if default is None else str(default)


def markdown_rows() -> Iterator[str]:
    yield "| concern | setting | flag | env | default |"
    yield "| --- | --- | --- | --- | --- |"
    previous = None
    for name in Settings.model_fields:
        group = concern(name)
        shown = group if group != previous else ""
        previous = group
        yield f"| {shown} | `{name}` | `{flag(name)}` | {env_name(name)} | {_shown_default(name)} |"


def markdown_table() -> str:
    """The settings table of docs/configuration.md, between its markers."""
    return "\n".join([TABLE_START, *markdown_rows(), TABLE_END])


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m workers.settings --markdown")
    print(markdown_table())
