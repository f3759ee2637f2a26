"""Worker settings: flags override environment variables, which override defaults.

| setting | env | default |
| --- | --- | --- |
| temporal_address | NODEFLOW_TEMPORAL_ADDRESS | 127.0.0.1:7233 |
| temporal_namespace | NODEFLOW_TEMPORAL_NAMESPACE | default |
| task_queue | NODEFLOW_TASK_QUEUE | nodeflow |
| kubeconfig | NODEFLOW_KUBECONFIG (then in-cluster config) | none |
| aws_endpoint_url | NODEFLOW_AWS_ENDPOINT_URL | none (real AWS) |
| region | AWS_REGION | us-west-2 |
| cluster_name | NODEFLOW_CLUSTER_NAME | nodeflow-dev |
| cluster_endpoint | NODEFLOW_CLUSTER_ENDPOINT | "" (user data) |
| kubernetes_version | NODEFLOW_KUBERNETES_VERSION | 1.32 |
| registration_ttl | NODEFLOW_REGISTRATION_TTL | 15m |
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Settings:
    temporal_address: str = "127.0.0.1:7233"
    temporal_namespace: str = "default"
    task_queue: str = "nodeflow"
    kubeconfig: str | None = None
    aws_endpoint_url: str | None = None
    region: str = "us-west-2"
    cluster_name: str = "nodeflow-dev"
    cluster_endpoint: str = ""
    kubernetes_version: str = "1.32"
    registration_ttl: str = "15m"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        values: dict[str, str] = {}
        for field in fields(cls):
            name = _ENV.get(field.name, f"NODEFLOW_{field.name.upper()}")
            if name in env and env[name] != "":
                values[field.name] = env[name]
        return cls(**values)  # type: ignore[arg-type]

    def with_args(self, args: argparse.Namespace) -> Settings:
        overrides = {f.name: getattr(args, f.name) for f in fields(self) if getattr(args, f.name, None) is not None}
        return Settings(**{**self.__dict__, **overrides})


_ENV = {"region": "AWS_REGION"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for every setting (`--temporal-address`, `--cluster-name`, ...); unset flags keep env/defaults."""
    for field in fields(Settings):
        parser.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name, default=None)
