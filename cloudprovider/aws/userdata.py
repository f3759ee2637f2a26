"""User data that joins a node to the cluster, per AMI family (pure; returns text, not base64).

- AL2023: a MIME multipart document with a nodeadm `NodeConfig` (kubelet flags carry the labels and taints);
- AL2: a MIME multipart document with a shell part calling /etc/eks/bootstrap.sh;
- Bottlerocket: TOML settings;
- Custom: `spec.userData` unchanged.

Every node registers with the `karpenter.sh/unregistered:NoExecute` taint, which the registration step
removes. The node class's own `spec.userData` is merged as an extra MIME part (AL2, AL2023) or prepended
(Bottlerocket TOML).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from apis.ec2nodeclass import KubeletConfiguration
from apis.labels import UNREGISTERED_TAINT_KEY

BOUNDARY = "//"
UNREGISTERED_TAINT = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}


@dataclass(frozen=True)
class BootstrapOptions:
    cluster_name: str
    cluster_endpoint: str = ""
    ca_bundle: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    kubelet: KubeletConfiguration | None = None
    custom_user_data: str | None = None


def _taints(options: BootstrapOptions) -> list[Mapping[str, str]]:
    taints = list(options.taints)
    if not any(t.get("key") == UNREGISTERED_TAINT_KEY for t in taints):
        taints.append(UNREGISTERED_TAINT)
    return taints


def _taint_flag(taints: Sequence[Mapping[str, str]]) -> str:
    parts = [
        f"{t['key']}={t['value']}:{t['effect']}" if t.get("value") else f"{t['key']}:{t['effect']}" for t in taints
    ]
    return ",".join(parts)


def _label_flag(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _mime(parts: Sequence[tuple[str, str]]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for content_type, body in parts:
        lines += [f"--{BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    lines.append(f"--{BOUNDARY}--")
    return "\n".join(lines) + "\n"


def _custom_part(custom: str | None) -> list[tuple[str, str]]:
    if not custom:
        return []
    content_type = "text/x-shellscript" if custom.startswith("#!") else "text/x-shellscript; charset=us-ascii"
    return [(content_type, custom)]


def _kubelet_config(kubelet: KubeletConfiguration | None) -> dict[str, object]:
    if kubelet is None:
        return {}
    config = kubelet.model_dump(by_alias=True, exclude_none=True)
    return {k: config[k] for k in sorted(config)}


def al2023(options: BootstrapOptions) -> str:
    flags = [f"--node-labels={_label_flag(options.labels)}"] if options.labels else []
    flags.append(f"--register-with-taints={_taint_flag(_taints(options))}")
    kubelet: dict[str, object] = {"flags": flags}
    if config := _kubelet_config(options.kubelet):
        kubelet["config"] = config
    node_config = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "name": options.cluster_name,
                "apiServerEndpoint": options.cluster_endpoint,
                "certificateAuthority": options.ca_bundle,
            },
            "kubelet": kubelet,
        },
    }
    body = yaml.safe_dump(node_config, sort_keys=False, default_flow_style=False)
    return _mime([*_custom_part(options.custom_user_data), ("application/node.eks.aws", body)])


def al2(options: BootstrapOptions) -> str:
    extra = [f"--register-with-taints={_taint_flag(_taints(options))}"]
    if options.labels:
        extra.insert(0, f"--node-labels={_label_flag(options.labels)}")
    max_pods = options.kubelet.max_pods if options.kubelet else None
    if max_pods is not None:
        extra.append(f"--max-pods={max_pods}")
    script = "\n".join(
        [
            "#!/bin/bash -xe",
            "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
            f"/etc/eks/bootstrap.sh '{options.cluster_name}' --apiserver-endpoint '{options.cluster_endpoint}' "
            f"--b64-cluster-ca '{options.ca_bundle}'"
            + (" --use-max-pods false" if max_pods is not None else "")
            + f" \\\n  --kubelet-extra-args '{' '.join(extra)}'",
        ]
    )
    return _mime([*_custom_part(options.custom_user_data), ("text/x-shellscript; charset=us-ascii", script)])


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def bottlerocket(options: BootstrapOptions) -> str:
    lines = [options.custom_user_data.rstrip("\n"), ""] if options.custom_user_data else []
    lines += [
        "[settings.kubernetes]",
        f"cluster-name = {_toml_string(options.cluster_name)}",
        f"api-server = {_toml_string(options.cluster_endpoint)}",
        f"cluster-certificate = {_toml_string(options.ca_bundle)}",
    ]
    if options.kubelet and options.kubelet.max_pods is not None:
        lines.append(f"max-pods = {options.kubelet.max_pods}")
    if options.labels:
        lines += ["", "[settings.kubernetes.node-labels]"]
        lines += [f"{_toml_string(k)} = {_toml_string(options.labels[k])}" for k in sorted(options.labels)]
    taints: dict[str, list[str]] = {}
    for t in _taints(options):
        taints.setdefault(t["key"], []).append(f"{t.get('value', '')}:{t['effect']}")
    lines += ["", "[settings.kubernetes.node-taints]"]
    lines += [f"{_toml_string(k)} = {json.dumps(v)}" for k, v in sorted(taints.items())]
    return "\n".join(lines) + "\n"


def render(family: str, options: BootstrapOptions) -> str:
    """User data for the AMI family. Raises ValueError for families nodeflow cannot bootstrap."""
    if family == "AL2023":
        return al2023(options)
    if family == "AL2":
        return al2(options)
    if family == "Bottlerocket":
        return bottlerocket(options)
    if family == "Custom":
        return options.custom_user_data or ""
    raise ValueError(
        f'spec.amiFamily "{family}" is not supported by nodeflow yet: use AL2023, AL2, Bottlerocket or Custom'
    )
