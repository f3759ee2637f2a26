"""The local stack's node_ready_delay reaches the kubelet role (how long a joined Node takes to turn
Ready; benchmarks use tens of seconds, as a real node takes), and a negative one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack import services
from devstack.stack import DevStackConfig


def test_the_kubelet_role_takes_the_ready_delay_and_defaults_to_one_second() -> None:
    base = ["kubelet", "--kube-url", "http://k", "--moto-url", "http://m", "--ready-file", "r.json"]
    assert services.parse_args(base).ready_delay == 1.0
    assert services.parse_args([*base, "--ready-delay", "30"]).ready_delay == 30.0


def test_a_negative_node_ready_delay_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="node_ready_delay -1"):
        DevStackConfig(state_dir=tmp_path, start_worker=False, node_ready_delay=-1)
