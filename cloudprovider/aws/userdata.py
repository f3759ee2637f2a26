"""User data that joins a node to the cluster, per AMI family (pure; returns text, not base64).

- AL2023: a MIME multipart document with a nodeadm `NodeConfig` (kubelet flags carry the labels and taints);
- AL2: a MIME multipart document with a shell part calling /etc/eks/bootstrap.sh;
- Bottlerocket: TOML settings;
- Custom: `spec.userData` unchanged.

Every node registers with the `karpenter.sh/unregistered:NoExecute` taint, which the registration step
removes. The node class's own `spec.userData` is merged as an extra MIME part (AL2, AL2023) or, for
Bottlerocket, parsed as TOML and merged key by key under nodeflow's settings (nodeflow's values win,
labels and taints are merged; see `cloudprovider.aws.tomlwriter.merge`).

What a node needs to join (`BootstrapOptions`, from `cloudprovider.aws.cluster.ClusterConnection`) goes
where each family reads it:

| | AL2023 NodeConfig | AL2 bootstrap.sh | Bottlerocket `[settings.kubernetes]` |
| --- | --- | --- | --- |
| cluster name | spec.cluster.name | first argument | cluster-name |
| endpoint | spec.cluster.apiServerEndpoint | --apiserver-endpoint | api-server |
| CA (base64) | spec.cluster.certificateAuthority | --b64-cluster-ca | cluster-certificate |
| service CIDR | spec.cluster.cidr | (--service-ipv6-cidr for IPv6) | - |
| DNS IP | kubelet config clusterDNS | --dns-cluster-ip | cluster-dns-ip |

The DNS IP is the node class's `spec.kubelet.clusterDNS` when set, else the one derived from the
service CIDR; an unknown DNS IP or CIDR is left out, so the AMI's own default applies.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from apis.ec2nodeclass import KubeletConfiguration
from apis.labels import UNREGISTERED_TAINT_KEY
from cloudprovider.aws import tomlwriter

BOUNDARY = "//"
UNREGISTERED_TAINT = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}


@dataclass(frozen=True)
class BootstrapOptions:
    """Inputs of the user data. `ca_bundle` is base64 PEM (DescribeCluster's certificateAuthority.data);
    `dns_ip` the cluster DNS Service IP derived from `service_cidr` ("" when unknown)."""

    cluster_name: str
    cluster_endpoint: str = ""
    ca_bundle: str = ""
    service_cidr: str = ""
    dns_ip: str = ""
    ip_family: str = "ipv4"
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    kubelet: KubeletConfiguration | None = None
    custom_user_data: str | None = None


def dns_ip(options: BootstrapOptions) -> str:
    """The node class's first `spec.kubelet.clusterDNS` entry when set, else `options.dns_ip`."""
    if options.kubelet is not None and options.kubelet.cluster_dns:
        return options.kubelet.cluster_dns[0]
    return options.dns_ip


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
    config = _kubelet_config(options.kubelet)
    if "clusterDNS" not in config and (dns := dns_ip(options)):
        config = {**config, "clusterDNS": [dns]}
    if config:
        kubelet["config"] = {k: config[k] for k in sorted(config)}
    cluster: dict[str, object] = {
        "name": options.cluster_name,
        "apiServerEndpoint": options.cluster_endpoint,
        "certificateAuthority": options.ca_bundle,
    }
    if options.service_cidr:
        cluster["cidr"] = options.service_cidr
    node_config = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"cluster": cluster, "kubelet": kubelet},
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
    args = [
        options.cluster_name,
        "--apiserver-endpoint",
        options.cluster_endpoint,
        "--b64-cluster-ca",
        options.ca_bundle,
    ]
    if dns := dns_ip(options):
        args += ["--dns-cluster-ip", dns]
    if options.ip_family == "ipv6":
        args += ["--ip-family", "ipv6"]
        if options.service_cidr:
            args += ["--service-ipv6-cidr", options.service_cidr]
    if max_pods is not None:
        args += ["--use-max-pods", "false"]
    script = "\n".join(
        [
            "#!/bin/bash -xe",
            "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
            "/etc/eks/bootstrap.sh "
            + " ".join(shlex.quote(a) for a in args)
            + f" \\\n  --kubelet-extra-args {shlex.quote(' '.join(extra))}",
        ]
    )
    return _mime([*_custom_part(options.custom_user_data), ("text/x-shellscript; charset=us-ascii", script)])


def _bottlerocket_settings(options: BootstrapOptions) -> dict[str, object]:
    kubernetes: dict[str, object] = {
        "cluster-name": options.cluster_name,
        "api-server": options.cluster_endpoint,
        "cluster-certificate": options.ca_bundle,
    }
    if dns := dns_ip(options):
        kubernetes["cluster-dns-ip"] = dns
    if options.kubelet and options.kubelet.max_pods is not None:
        kubernetes["max-pods"] = options.kubelet.max_pods
    if options.labels:
        kubernetes["node-labels"] = {k: options.labels[k] for k in sorted(options.labels)}
    taints: dict[str, list[str]] = {}
    for t in _taints(options):
        taints.setdefault(t["key"], []).append(f"{t.get('value', '')}:{t['effect']}")
    kubernetes["node-taints"] = dict(sorted(taints.items()))
    return {"settings": {"kubernetes": kubernetes}}


def bottlerocket(options: BootstrapOptions) -> str:
    """TOML: the node class's `spec.userData` (TOML) merged key by key with nodeflow's settings.
    Raises ValueError when `spec.userData` is not TOML."""
    custom: dict[str, object] = {}
    if options.custom_user_data:
        try:
            custom = tomllib.loads(options.custom_user_data)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"spec.userData is not valid TOML for Bottlerocket: {error}") from None
    return tomlwriter.dumps(tomlwriter.merge(custom, _bottlerocket_settings(options)))


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
