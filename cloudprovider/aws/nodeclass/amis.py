"""AMI aliases (`al2023@latest`, `al2@v20240807`, `bottlerocket@v1.20.0`, `windows2022@latest`) -> the SSM
public parameters that name the EKS-optimized AMI for each architecture and variant.

Windows (as Karpenter's Windows AMI family): only `@latest` (the EKS-optimized Windows AMIs publish one
"latest" parameter per Windows Server release and Kubernetes version, so a release cannot be pinned), only
the Core edition, only x86_64: `/aws/service/ami-windows-latest/Windows_Server-<year>-English-Core-
EKS_Optimized-<k8s>/image_id`. Windows Server 2025 needs Kubernetes 1.35 or later (Karpenter refuses the
alias on older clusters).

Pure: only names. `nodeclass.py` reads the parameters; the local stack seeds the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

ALIAS_FAMILIES: Final = {
    "al2023": "AL2023",
    "al2": "AL2",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
ARCHES: Final = ("x86_64", "arm64")
VARIANTS: Final = ("standard", "nvidia", "neuron")
# amiFamily -> the Windows Server release its AMIs run.
WINDOWS_RELEASES: Final = {"Windows2019": "2019", "Windows2022": "2022", "Windows2025": "2025"}
# The oldest Kubernetes minor version each Windows family's alias resolves on (absent: any).
WINDOWS_MIN_KUBERNETES_MINOR: Final = {"Windows2025": 35}


@dataclass(frozen=True)
class AliasParameter:
    """One SSM parameter an alias resolves through, and what the AMI it names runs on."""

    name: str
    arch: str  # EC2 architecture: x86_64 | arm64
    variant: str  # standard | nvidia | neuron


def parse_alias(alias: str) -> tuple[str, str]:
    """`family@version` -> (AMI family as in amiFamily, version). Raises ValueError naming the accepted forms."""
    family, sep, version = alias.partition("@")
    if not sep or family.lower() not in ALIAS_FAMILIES or not version:
        raise ValueError(
            f'amiSelectorTerms alias "{alias}" is invalid: use <family>@<version> with family one of '
            f"{', '.join(ALIAS_FAMILIES)} and version 'latest' or a release such as v20240807"
        )
    resolved = ALIAS_FAMILIES[family.lower()]
    if resolved in WINDOWS_RELEASES and version != "latest":
        raise ValueError(
            f'amiSelectorTerms alias "{alias}": windows families may only specify version "latest"; '
            f'use "{family.lower()}@latest"'
        )
    if version != "latest" and not version.startswith("v"):
        raise ValueError(f'amiSelectorTerms alias "{alias}": version must be "latest" or start with "v" (v20240807)')
    return resolved, version


def is_windows(family: str) -> bool:
    """True for the Windows AMI families (Windows2019, Windows2022, Windows2025)."""
    return family in WINDOWS_RELEASES


def windows_parameter(family: str, kubernetes_version: str) -> str:
    """The SSM public parameter naming the latest EKS-optimized Windows Server Core AMI of a Windows family
    (`Windows2022`) for a Kubernetes version (`1.32`)."""
    release = WINDOWS_RELEASES[family]
    return (
        f"/aws/service/ami-windows-latest/Windows_Server-{release}-English-Core-EKS_Optimized-"
        f"{kubernetes_version}/image_id"
    )


def check_kubernetes_version(family: str, kubernetes_version: str) -> None:
    """Raises ValueError when the family's alias cannot be used on this Kubernetes version (Windows Server
    2025 before 1.35, as Karpenter refuses it). An unparsable version is let through."""
    minimum = WINDOWS_MIN_KUBERNETES_MINOR.get(family)
    try:
        minor = int(kubernetes_version.split(".")[1])
    except (IndexError, ValueError):
        return
    if minimum is not None and minor < minimum:
        raise ValueError(f"{family} requires Kubernetes 1.{minimum} or later; the cluster runs {kubernetes_version}")


def _al2023(k8s: str, version: str, arch: str, variant: str) -> str:
    base = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant}"
    if version == "latest":
        return f"{base}/recommended/image_id"
    return f"{base}/amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}/image_id"


def _al2(k8s: str, version: str, arch: str, variant: str) -> str:
    flavour, node = {
        ("x86_64", "standard"): ("amazon-linux-2", "amazon-eks-node"),
        ("arm64", "standard"): ("amazon-linux-2-arm64", "amazon-eks-arm64-node"),
        ("x86_64", "nvidia"): ("amazon-linux-2-gpu", "amazon-eks-gpu-node"),
    }[(arch, variant)]
    base = f"/aws/service/eks/optimized-ami/{k8s}/{flavour}"
    return f"{base}/recommended/image_id" if version == "latest" else f"{base}/{node}-{k8s}-{version}/image_id"


def _bottlerocket(k8s: str, version: str, arch: str, variant: str) -> str:
    flavour = f"aws-k8s-{k8s}" + ("-nvidia" if variant == "nvidia" else "")
    release = "latest" if version == "latest" else version.removeprefix("v")
    return f"/aws/service/bottlerocket/{flavour}/{arch}/{release}/image_id"


# The (arch, variant) pairs each family publishes an AMI for, as Karpenter's AMI families read them: AL2023
# has its own Neuron AMI (x86_64 only); AL2's GPU AMI serves NVIDIA and Neuron types and has no arm64
# build; Bottlerocket's standard x86_64 AMI serves Neuron types. Several pairs may name one parameter.
FAMILY_VARIANTS: Final = {
    "AL2023": (
        ("x86_64", "standard"),
        ("x86_64", "nvidia"),
        ("x86_64", "neuron"),
        ("arm64", "standard"),
        ("arm64", "nvidia"),
    ),
    "AL2": (("x86_64", "standard"), ("x86_64", "nvidia"), ("x86_64", "neuron"), ("arm64", "standard")),
    "Bottlerocket": (
        ("x86_64", "standard"),
        ("x86_64", "nvidia"),
        ("x86_64", "neuron"),
        ("arm64", "standard"),
        ("arm64", "nvidia"),
    ),
}
_NEURON_PARAMETER_VARIANT: Final = {"AL2023": "neuron", "AL2": "nvidia", "Bottlerocket": "standard"}


def alias_parameters(alias: str, kubernetes_version: str) -> list[AliasParameter]:
    """Every (SSM parameter, arch, variant) the alias may resolve through, in `FAMILY_VARIANTS` order; one
    parameter may serve several variants (AL2's GPU AMI serves `nvidia` and `neuron`). A Windows alias has
    one, x86_64 standard. Raises ValueError for an invalid alias or one the Kubernetes version cannot use
    (`check_kubernetes_version`)."""
    family, version = parse_alias(alias)
    if is_windows(family):
        check_kubernetes_version(family, kubernetes_version)
        return [AliasParameter(windows_parameter(family, kubernetes_version), "x86_64", "standard")]
    build = {"AL2023": _al2023, "AL2": _al2, "Bottlerocket": _bottlerocket}[family]
    out: list[AliasParameter] = []
    for arch, variant in FAMILY_VARIANTS[family]:
        published = _NEURON_PARAMETER_VARIANT[family] if variant == "neuron" else variant
        out.append(AliasParameter(build(kubernetes_version, version, arch, published), arch, variant))
    return out


def variant_for(nvidia_gpus: bool, neuron_devices: bool) -> str:
    """The AMI variant an instance type needs: `nvidia` for NVIDIA GPUs, `neuron` for Inferentia/Trainium,
    else `standard`."""
    if nvidia_gpus:
        return "nvidia"
    return "neuron" if neuron_devices else "standard"
