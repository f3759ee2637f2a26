"""`nodeflow dev` argument handling that fails before any process starts."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from cloudprovider.aws.interruption.messages import ACTIONS, Kind, ParsedMessage, parse_message
from devstack.aws import interruption
from devstack.stack import DevStack
from workers import cli
from workers.cli import dev as dev_cmd


def test_defaults_are_the_well_known_ports() -> None:
    args = cli.build_parser(["dev"]).parse_args(["dev"])
    assert (args.temporal_port, args.ui_port, args.kube_port, args.moto_port) == (7233, 8233, 6443, 5000)
    assert args.cluster_name == "nodeflow-dev"
    assert args.state_dir == Path(".nodeflow")
    assert args.apply == [] and not args.until_settled and args.output == "text"


def test_the_interruption_queue_is_the_cluster_name_unless_given_and_empty_turns_it_off() -> None:
    parser = cli.build_parser(["dev"])
    assert dev_cmd.interruption_queue(parser.parse_args(["dev", "--cluster-name", "prod"])) == "prod"
    assert dev_cmd.interruption_queue(parser.parse_args(["dev", "--interruption-queue", "q"])) == "q"
    assert dev_cmd.interruption_queue(parser.parse_args(["dev", "--interruption-queue", ""])) == ""


def test_a_stack_without_a_queue_passes_no_flag_to_the_worker() -> None:
    argv = DevStack(dev_cmd.stack_config(interruption_queue="")).worker_argv()
    assert "--interruption-queue" not in argv
    with pytest.raises(ValueError, match="without spaces"):
        dev_cmd.stack_config(interruption_queue="a b")


@pytest.mark.parametrize("command", [["dev-interrupt"], ["dev", "interrupt"]])
def test_dev_interrupt_without_a_running_stack_exits_2(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*command, "ip-10-0-0-1.ec2.internal", "--state-dir", str(tmp_path)]) == 2
    assert "no local stack runs in" in capsys.readouterr().err


def test_a_missing_apply_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["dev", "--state-dir", str(tmp_path), "--apply", str(tmp_path / "nope.yaml"), "--until-settled"])
    assert code == 2
    assert "nope.yaml: cannot read the file" in capsys.readouterr().err


def test_an_unserved_kind_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    assert cli.main(["dev", "--state-dir", str(tmp_path), "--apply", str(bad)]) == 2
    assert "does not serve v1 Secret" in capsys.readouterr().err


def test_a_negative_node_ready_delay_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["dev", "--state-dir", str(tmp_path), "--node-ready-delay", "-5"]) == 2
    assert "--node-ready-delay -5.0 must be 0 or more seconds" in capsys.readouterr().err
    assert cli.build_parser(["dev"]).parse_args(["dev"]).node_ready_delay == 1.0


def test_a_bad_port_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["dev", "--state-dir", str(tmp_path), "--kube-port", "99999"]) == 2
    assert "--kube-port 99999 is not a port" in capsys.readouterr().err


def test_a_taken_port_exits_2_naming_the_flag_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = cli.main(["dev", "--state-dir", str(tmp_path), "--temporal-port", "0", "--kube-port", str(port)])
    assert code == 2
    assert f"port {port} (--kube-port) is already in use" in capsys.readouterr().err
    assert not (tmp_path / "logs" / "temporal.log").exists()


@pytest.mark.parametrize(
    ("kind", "parsed_kind"),
    [
        ("spot", Kind.SPOT_INTERRUPTION),
        ("scheduled-change", Kind.SCHEDULED_CHANGE),
        ("stopping", Kind.INSTANCE_STOPPING),
    ],
)
def test_each_dev_interrupt_kind_sends_an_event_the_worker_acts_on(kind: str, parsed_kind: Kind) -> None:
    assert dev_cmd.INTERRUPTION_KINDS == interruption.KINDS
    parsed = parse_message(interruption.interruption_event(kind, "i-0123456789abcdef0", "us-west-2"))
    assert isinstance(parsed, ParsedMessage)
    assert (parsed.kind, parsed.instance_ids) == (parsed_kind, ("i-0123456789abcdef0",))
    assert ACTIONS[parsed.kind].disrupts


def test_dev_interrupt_refuses_an_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["dev-interrupt", "n", "--kind", "reboot"])
    assert "invalid choice: 'reboot'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="use one of spot, scheduled-change, stopping"):
        interruption.interruption_event("reboot", "i-0123456789abcdef0", "us-west-2")
