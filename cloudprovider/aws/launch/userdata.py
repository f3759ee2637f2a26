"""User data that joins a node to the cluster, per AMI family (pure; returns text, not base64).

- AL2023: a MIME multipart document with a nodeadm `NodeConfig` (kubelet flags carry the labels and taints);
- AL2: a MIME multipart document with a shell part calling /etc/eks/bootstrap.sh;
- Bottlerocket: TOML settings;
- Windows2019/2022/2025: one `<powershell>` block calling the AMI's Start-EKSBootstrap.ps1;
- Custom: `spec.userData` unchanged.

Every node registers with the `karpenter.sh/unregistered:NoExecute` taint, which the registration step
removes. The node class's own `spec.userData` is merged as Karpenter merges it:

- AL2023: nodeflow's NodeConfig first, then the user's parts: each part of a MIME multi-part document
  (one that starts with `MIME-Version:` or `Content-Type:`), else the whole text as one part, a
  NodeConfig when it is a YAML mapping, a shell script otherwise (nodeadm merges the NodeConfigs in order);
- AL2: the user's parts (the same way, but a non-MIME text is always a shell script) before the
  bootstrap script;
- Bottlerocket: parsed as TOML and merged key by key under nodeflow's settings (nodeflow's values win,
  labels and taints are merged; see `cloudprovider.aws.launch.tomlwriter.merge`).
- Windows: the user's PowerShell written as is inside the same `<powershell>` block, before the bootstrap
  call (so it runs before the node joins).

A document that claims to be MIME but is not multi-part, or nests multi-parts, is refused (ValueError
naming `spec.userData`).

The node class's `spec.kubelet` reaches every family: AL2023 as the NodeConfig's inline kubelet config,
AL2 as `--kubelet-extra-args` flags, Bottlerocket as its `[settings.kubernetes]` keys, Windows as
`-KubeletExtraArgs` flags (the same flags as AL2).

What a node needs to join (`BootstrapOptions`, from `cloudprovider.aws.nodeclass.cluster.ClusterConnection`) goes
where each family reads it:

| | AL2023 NodeConfig | AL2 bootstrap.sh | Bottlerocket `[settings.kubernetes]` | Windows Start-EKSBootstrap.ps1 |
| --- | --- | --- | --- | --- |
| cluster name | spec.cluster.name | first argument | cluster-name | -EKSClusterName |
| endpoint | spec.cluster.apiServerEndpoint | --apiserver-endpoint | api-server | -APIServerEndpoint |
| CA (base64) | spec.cluster.certificateAuthority | --b64-cluster-ca | cluster-certificate | -Base64ClusterCA |
| service CIDR | spec.cluster.cidr | (--service-ipv6-cidr for IPv6) | - | - |
| DNS IP | kubelet config clusterDNS | --dns-cluster-ip | cluster-dns-ip | -DNSClusterIP |
| RAID0 instance store | spec.instance.localStorage.strategy | --local-disks raid0 | bootstrap-commands (below) | - |

The DNS IP is the node class's `spec.kubelet.clusterDNS` when set, else the one derived from the
service CIDR; an unknown DNS IP or CIDR is left out, so the AMI's own default applies.

`instanceStorePolicy: RAID0` asks each AMI to assemble the local NVMe disks into one RAID0 array for the
kubelet's data; Bottlerocket does it with an essential bootstrap command run on every boot
(`apiclient ephemeral-storage init`, then `bind` of the containerd, kubelet and pod-log directories).
"""

from __future__ import annotations

import email
import email.message
import shlex
import tomllib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

import cloudprovider.aws.launch.tomlwriter as tomlwriter
from apis.ec2nodeclass import KubeletConfiguration
from apis.labels import UNREGISTERED_TAINT_KEY

BOUNDARY = "//"
NODE_CONFIG = "application/node.eks.aws"
SHELL_SCRIPT = 'text/x-shellscript; charset="us-ascii"'
UNREGISTERED_TAINT = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}
BOTTLEROCKET_RAID0_COMMAND = "000-mount-instance-storage"
BOTTLEROCKET_EPHEMERAL_DIRS = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")


@dataclass(frozen=True)
class BootstrapOptions:
    """Inputs of the user data. `ca_bundle` is base64 PEM (DescribeCluster's certificateAuthority.data);
    `dns_ip` the cluster DNS Service IP derived from `service_cidr` ("" when unknown);
    `instance_store_raid0` asks the AMI to build a RAID0 array of the local NVMe disks for the kubelet's data
    (`instanceStorePolicy: RAID0`)."""

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
    instance_store_raid0: bool = False


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


Part = tuple[tuple[tuple[str, str], ...], str]  # (headers, body) of one MIME part


def _part(content_type: str, body: str) -> Part:
    return ((("Content-Type", content_type),), body)


def _mime(parts: Sequence[Part]) -> str:
    boundary = BOUNDARY
    if any(line.startswith(f"--{boundary}") for _, body in parts for line in body.splitlines()):
        boundary = f"==nodeflow-{uuid.uuid4().hex}=="  # a user part's body holds our delimiter
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{boundary}"', ""]
    for headers, body in parts:
        lines += [f"--{boundary}", *(f"{name}: {value}" for name, value in headers), "", body.rstrip("\n"), ""]
    lines.append(f"--{boundary}--")
    return "\n".join(lines) + "\n"


def _is_mime(text: str) -> bool:
    return text.lstrip().startswith(("MIME-Version:", "Content-Type:"))


def _mime_parts(text: str) -> list[Part]:
    """Each part of the user's MIME multi-part document, headers (but MIME-Version) and body as written."""
    message = email.message_from_string(text.lstrip())
    if not message.is_multipart():
        raise ValueError(
            "spec.userData starts with MIME headers but is not a multipart document: give "
            'Content-Type: multipart/mixed; boundary="..." with its parts, or plain text without MIME headers'
        )
    parts: list[Part] = []
    for part in message.get_payload():
        assert isinstance(part, email.message.Message)
        if part.is_multipart():
            raise ValueError("spec.userData has a multipart part inside a multipart document: flatten it")
        headers = tuple((name, str(value)) for name, value in part.items() if name.lower() != "mime-version")
        body = str(part.get_payload())
        if not headers and not body.strip():
            continue  # a last delimiter left open (`--//` at the end, as Karpenter's examples write it)
        parts.append((headers or (("Content-Type", "text/plain"),), body))
    return parts


def _is_yaml_mapping(text: str) -> bool:
    try:
        return isinstance(yaml.safe_load(text), dict)
    except yaml.YAMLError:
        return False


def _user_parts(custom: str | None, node_config: bool) -> list[Part]:
    """The node class's `spec.userData` as MIME parts (see the module docstring); `node_config`: a plain
    YAML mapping is an AL2023 NodeConfig rather than a shell script."""
    if not custom:
        return []
    if _is_mime(custom):
        return _mime_parts(custom)
    if node_config and _is_yaml_mapping(custom):
        return [_part(NODE_CONFIG, custom)]
    return [_part(SHELL_SCRIPT, custom)]


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
    spec: dict[str, object] = {"cluster": cluster}
    if options.instance_store_raid0:  # nodeadm builds the array and mounts it where the kubelet keeps data
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    spec["kubelet"] = kubelet
    node_config = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}
    body = yaml.safe_dump(node_config, sort_keys=False, default_flow_style=False)
    return _mime([_part(NODE_CONFIG, body), *_user_parts(options.custom_user_data, node_config=True)])


def _pairs(values: Mapping[str, str], separator: str) -> str:
    return ",".join(f"{key}{separator}{values[key]}" for key in sorted(values))


def kubelet_flags(kubelet: KubeletConfiguration | None) -> list[str]:
    """`spec.kubelet` as kubelet command-line flags (AL2's `--kubelet-extra-args`), the flags Karpenter
    writes for the same fields; map entries sorted by key. `clusterDNS` is not among them: bootstrap.sh
    takes it as `--dns-cluster-ip`."""
    if kubelet is None:
        return []
    flags: list[str] = []
    if kubelet.max_pods is not None:
        flags.append(f"--max-pods={kubelet.max_pods}")
    if kubelet.pods_per_core is not None:
        flags.append(f"--pods-per-core={kubelet.pods_per_core}")
    maps = (
        ("--system-reserved", kubelet.system_reserved, "="),
        ("--kube-reserved", kubelet.kube_reserved, "="),
        ("--eviction-hard", kubelet.eviction_hard, "<"),
        ("--eviction-soft", kubelet.eviction_soft, "<"),
        ("--eviction-soft-grace-period", kubelet.eviction_soft_grace_period, "="),
    )
    flags += [f"{flag}={_pairs(values, separator)}" for flag, values, separator in maps if values]
    if kubelet.eviction_max_pod_grace_period is not None:
        flags.append(f"--eviction-max-pod-grace-period={kubelet.eviction_max_pod_grace_period}")
    if kubelet.image_gc_high_threshold_percent is not None:
        flags.append(f"--image-gc-high-threshold={kubelet.image_gc_high_threshold_percent}")
    if kubelet.image_gc_low_threshold_percent is not None:
        flags.append(f"--image-gc-low-threshold={kubelet.image_gc_low_threshold_percent}")
    if kubelet.cpu_cfs_quota is not None:
        flags.append(f"--cpu-cfs-quota={str(kubelet.cpu_cfs_quota).lower()}")
    return flags


def al2(options: BootstrapOptions) -> str:
    extra = [f"--register-with-taints={_taint_flag(_taints(options))}", *kubelet_flags(options.kubelet)]
    if options.labels:
        extra.insert(0, f"--node-labels={_label_flag(options.labels)}")
    max_pods = options.kubelet.max_pods if options.kubelet else None
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
    if options.instance_store_raid0:  # bootstrap.sh builds the array before the kubelet starts
        args += ["--local-disks", "raid0"]
    script = "\n".join(
        [
            "#!/bin/bash -xe",
            "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
            "/etc/eks/bootstrap.sh "
            + " ".join(shlex.quote(a) for a in args)
            + f" \\\n  --kubelet-extra-args {shlex.quote(' '.join(extra))}",
        ]
    )
    return _mime([*_user_parts(options.custom_user_data, node_config=False), _part(SHELL_SCRIPT, script)])


def _bottlerocket_kubelet(kubelet: KubeletConfiguration | None) -> dict[str, object]:
    """`spec.kubelet` as Bottlerocket `settings.kubernetes` keys, typed as Karpenter writes them (the
    image GC thresholds as strings). Bottlerocket has no pods-per-core setting; `clusterDNS` is written
    by the caller."""
    if kubelet is None:
        return {}
    out: dict[str, object] = {}
    if kubelet.max_pods is not None:
        out["max-pods"] = kubelet.max_pods
    maps = (
        ("system-reserved", kubelet.system_reserved),
        ("kube-reserved", kubelet.kube_reserved),
        ("eviction-hard", kubelet.eviction_hard),
        ("eviction-soft", kubelet.eviction_soft),
        ("eviction-soft-grace-period", kubelet.eviction_soft_grace_period),
    )
    out.update({key: {k: values[k] for k in sorted(values)} for key, values in maps if values})
    if kubelet.eviction_max_pod_grace_period is not None:
        out["eviction-max-pod-grace-period"] = kubelet.eviction_max_pod_grace_period
    if kubelet.image_gc_high_threshold_percent is not None:
        out["image-gc-high-threshold-percent"] = str(kubelet.image_gc_high_threshold_percent)
    if kubelet.image_gc_low_threshold_percent is not None:
        out["image-gc-low-threshold-percent"] = str(kubelet.image_gc_low_threshold_percent)
    if kubelet.cpu_cfs_quota is not None:
        out["cpu-cfs-quota-enforced"] = kubelet.cpu_cfs_quota
    return out


def _bottlerocket_settings(options: BootstrapOptions) -> dict[str, object]:
    kubernetes: dict[str, object] = {
        "cluster-name": options.cluster_name,
        "api-server": options.cluster_endpoint,
        "cluster-certificate": options.ca_bundle,
    }
    if dns := dns_ip(options):
        kubernetes["cluster-dns-ip"] = dns
    kubernetes.update(_bottlerocket_kubelet(options.kubelet))
    if options.labels:
        kubernetes["node-labels"] = {k: options.labels[k] for k in sorted(options.labels)}
    taints: dict[str, list[str]] = {}
    for t in _taints(options):
        taints.setdefault(t["key"], []).append(f"{t.get('value', '')}:{t['effect']}")
    kubernetes["node-taints"] = dict(sorted(taints.items()))
    settings: dict[str, object] = {"kubernetes": kubernetes}
    if options.instance_store_raid0:
        settings["bootstrap-commands"] = {BOTTLEROCKET_RAID0_COMMAND: _bottlerocket_raid0()}
    return {"settings": settings}


def _bottlerocket_raid0() -> dict[str, object]:
    """The bootstrap command that, on every boot before the kubelet, makes the instance store one RAID0
    array and binds the container runtime's, the kubelet's and the pod logs' directories onto it."""
    return {
        "commands": [
            ["apiclient", "ephemeral-storage", "init"],
            ["apiclient", "ephemeral-storage", "bind", "--dirs", *BOTTLEROCKET_EPHEMERAL_DIRS],
        ],
        "essential": True,
        "mode": "always",
    }


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


WINDOWS_FAMILIES = ("Windows2019", "Windows2022", "Windows2025")
WINDOWS_BOOTSTRAP_SCRIPT = r'[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"'
# Flags whose value is a comma-separated list: Karpenter writes their value in double quotes.
_QUOTED_FLAGS = (
    "--node-labels",
    "--register-with-taints",
    "--system-reserved",
    "--kube-reserved",
    "--eviction-hard",
    "--eviction-soft",
    "--eviction-soft-grace-period",
)


def _powershell_string(value: str) -> str:
    """`value` as a PowerShell single-quoted (verbatim) string: a quote inside is doubled."""
    return "'" + value.replace("'", "''") + "'"


def _windows_flag(flag: str) -> str:
    """`--name=a,b` as `--name="a,b"` for the list-valued flags of `_QUOTED_FLAGS`; others unchanged."""
    name, sep, value = flag.partition("=")
    return f'{name}="{value}"' if sep and name in _QUOTED_FLAGS else flag


def windows_kubelet_args(options: BootstrapOptions) -> list[str]:
    """The kubelet flags of `-KubeletExtraArgs`, in Karpenter's order: node labels (when any), the taints
    to register with, then `spec.kubelet` as `kubelet_flags` writes it; list values in double quotes."""
    flags = [f"--node-labels={_label_flag(options.labels)}"] if options.labels else []
    flags.append(f"--register-with-taints={_taint_flag(_taints(options))}")
    flags += kubelet_flags(options.kubelet)
    return [_windows_flag(f) for f in flags]


def windows(options: BootstrapOptions) -> str:
    """One `<powershell>` block: the node class's `spec.userData` (as written), then the call of the AMI's
    Start-EKSBootstrap.ps1 with the cluster's name, endpoint, CA (when known), the kubelet flags and the
    DNS IP (when known). The instance store policy and IPv6 are not passed: the script takes neither."""
    call = [
        "& $EKSBootstrapScriptFile",
        f"-EKSClusterName {_powershell_string(options.cluster_name)}",
        f"-APIServerEndpoint {_powershell_string(options.cluster_endpoint)}",
    ]
    if options.ca_bundle:
        call.append(f"-Base64ClusterCA {_powershell_string(options.ca_bundle)}")
    call.append(f"-KubeletExtraArgs {_powershell_string(' '.join(windows_kubelet_args(options)))}")
    if dns := dns_ip(options):
        call.append(f"-DNSClusterIP {_powershell_string(dns)}")
    lines = ["<powershell>"]
    if options.custom_user_data:
        lines.append(options.custom_user_data.rstrip("\n"))
    lines += [WINDOWS_BOOTSTRAP_SCRIPT, " ".join(call), "</powershell>"]
    return "\n".join(lines)


def render(family: str, options: BootstrapOptions) -> str:
    """User data for the AMI family. Raises ValueError for families nodeflow cannot bootstrap."""
    if family == "AL2023":
        return al2023(options)
    if family == "AL2":
        return al2(options)
    if family == "Bottlerocket":
        return bottlerocket(options)
    if family in WINDOWS_FAMILIES:
        return windows(options)
    if family == "Custom":
        return options.custom_user_data or ""
    raise ValueError(
        f'spec.amiFamily "{family}" is not supported by nodeflow yet: use AL2023, AL2, Bottlerocket, '
        "Windows2019, Windows2022, Windows2025 or Custom"
    )
