"""Read rendered user data the way each AMI family does: MIME parts, the nodeadm NodeConfig (YAML), the
/etc/eks/bootstrap.sh command line (shlex), Bottlerocket's `[settings.kubernetes]` (TOML) and the Windows
<powershell> block's Start-EKSBootstrap.ps1 call."""

from __future__ import annotations

import email
import re
import shlex
import tomllib
from typing import Any

import yaml


def mime_parts(text: str) -> list[tuple[str, str]]:
    """(content type, body) of each part of a MIME multi-part document."""
    message = email.message_from_string(text)
    assert message.is_multipart(), text
    return [(part.get_content_type(), str(part.get_payload())) for part in message.get_payload()]  # type: ignore[union-attr]


def node_config(text: str) -> dict[str, Any]:
    """nodeflow's NodeConfig in AL2023 user data: the first part (the user's own parts follow it)."""
    kind, body = mime_parts(text)[0]
    assert kind == "application/node.eks.aws", text
    configs = [yaml.safe_load(body)]
    assert configs[0]["apiVersion"] == "node.eks.aws/v1alpha1"
    assert configs[0]["kind"] == "NodeConfig"
    return dict(configs[0])


def bootstrap_argv(text: str) -> list[str]:
    """The arguments of the /etc/eks/bootstrap.sh command in AL2 user data."""
    scripts = [body for kind, body in mime_parts(text) if kind == "text/x-shellscript" and "bootstrap.sh" in body]
    assert len(scripts) == 1, text
    return shlex.split(scripts[0].split("/etc/eks/bootstrap.sh", 1)[1])


def flag(argv: list[str], name: str) -> str | None:
    """The value after `name` in `argv`, None when absent."""
    return argv[argv.index(name) + 1] if name in argv else None


def bottlerocket_kubernetes(text: str) -> dict[str, Any]:
    """`settings.kubernetes` of Bottlerocket user data (tomllib refuses a table declared twice)."""
    return dict(tomllib.loads(text)["settings"]["kubernetes"])


POWERSHELL_ARGUMENT = re.compile(r"-(\w+) '((?:[^']|'')*)'")


def powershell_block(text: str) -> str:
    """The body of the one `<powershell>` block Windows user data is."""
    assert text.startswith("<powershell>\n") and text.rstrip("\n").endswith("</powershell>"), text
    assert text.count("<powershell>") == 1, text
    return text.split("<powershell>\n", 1)[1].rsplit("</powershell>", 1)[0]


def windows_bootstrap(text: str) -> tuple[str, dict[str, str]]:
    """(the PowerShell before the Start-EKSBootstrap.ps1 call, the call's named arguments), single-quoted
    strings read the way PowerShell reads them."""
    body = powershell_block(text)
    before, _, call = body.partition("& $EKSBootstrapScriptFile ")
    assert call, text
    assert before.rstrip("\n").endswith(
        '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'
    ), text
    line = call.splitlines()[0]
    args = {name: value.replace("''", "'") for name, value in POWERSHELL_ARGUMENT.findall(line)}
    assert POWERSHELL_ARGUMENT.sub("", line).strip() == "", line
    return before.rsplit("[string]$EKSBootstrapScriptFile", 1)[0], args


def kubelet_extra_args(text: str) -> dict[str, str]:
    """`-KubeletExtraArgs` of Windows user data as {flag: value}, double quotes removed."""
    return dict(arg.split("=", 1) for arg in shlex.split(windows_bootstrap(text)[1]["KubeletExtraArgs"]))
