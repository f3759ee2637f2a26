"""AMI aliases (`al2023@latest`, `al2@v20240807`, `bottlerocket@v1.20.0`) -> the SSM public parameters
that name the EKS-optimized AMI for each architecture and variant.

Pure: only names. `nodeclass.py` reads the parameters; the local stack seeds the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

ALIAS_FAMILIES: Final = {"al2023": "AL2023", "al2": "AL2", "bottlerocket": "Bottlerocket"}
ARCHES: Final = ("x86_64", "arm64")
VARIANTS: Final = ("standard", "nvidia")


@dataclass(frozen=True)
class AliasParameter:
    """One SSM parameter an alias resolves through, and what the AMI it names runs on."""

    name: str
    arch: str  # EC2 architecture: x86_64 | arm64
    variant: str  # standard | nvidia


def parse_alias(alias: str) -> tuple[str, str]:
    """`family@version` -> (AMI family as in amiFamily, version). Raises ValueError naming the accepted forms."""
    family, sep, version = alias.partition("@")
    if not sep or family.lower() not in ALIAS_FAMILIES or not version:
        raise ValueError(
            f'amiSelectorTerms alias "{alias}" is invalid: use <family>@<version> with family one of '
            f"{', '.join(ALIAS_FAMILIES)} and version 'latest' or a release such as v20240807"
        )
    if version != "latest" and not version.startswith("v"):
        raise ValueError(f'amiSelectorTerms alias "{alias}": version must be "latest" or start with "v" (v20240807)')
    return ALIAS_FAMILIES[family.lower()], version


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


def alias_parameters(alias: str, kubernetes_version: str) -> list[AliasParameter]:
    """Every SSM parameter the alias may resolve through, in a fixed order (arch, then variant)."""
    family, version = parse_alias(alias)
    out: list[AliasParameter] = []
    for arch in ARCHES:
        for variant in VARIANTS:
            if family == "AL2" and (arch, variant) == ("arm64", "nvidia"):
                continue  # AL2 publishes no arm64 GPU AMI
            build = {"AL2023": _al2023, "AL2": _al2, "Bottlerocket": _bottlerocket}[family]
            out.append(AliasParameter(build(kubernetes_version, version, arch, variant), arch, variant))
    return out
