"""Resolve an EC2NodeClass's selector terms into subnets, security groups, AMIs, an instance profile and
its placement group (cloudprovider.aws.nodeclass.placementgroups).

Terms are ORed; inside a term, tags are ANDed, and a tag value of "*" means "any value". Results are
deduplicated and sorted (subnets by zone, then most free addresses, then id; AMIs as Karpenter orders
them, see `order_amis`). Anything that matches nothing, an AMI family or alias family nodeflow cannot
run, and an alias the cluster's Kubernetes version cannot use (windows2025 before 1.35) raise
NodeClassNotReadyError naming the field and the fix.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from apis.ec2nodeclass import AMIS_READY, SECURITY_GROUPS_READY, SUBNETS_READY, AMISelectorTerm, EC2NodeClass
from apis.meta import parse_rfc3339
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.nodeclass.amis import ALIAS_FAMILIES, alias_parameters, parse_alias
from cloudprovider.aws.nodeclass.placementgroups import PlacementGroup, resolve_placement_group
from cloudprovider.aws.sdk import EC2API, SSMAPI
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError, PartReadiness
from cloudprovider.types import ResolvedNodeClass

Filters = list[dict[str, Any]]


@dataclass(frozen=True)
class ResolvedAMI:
    id: str
    name: str
    arch: str  # x86_64 | arm64
    variant: str  # standard | nvidia | neuron
    creation_date: str = ""
    deprecated: bool = False  # its DeprecationTime has passed

    def as_status(self) -> dict[str, str]:
        """`{id, name, arch, variant}`, plus `deprecated: "true"` for a deprecated AMI (omitted otherwise,
        as Karpenter omits status.amis[].deprecated when false)."""
        status = {"id": self.id, "name": self.name, "arch": self.arch, "variant": self.variant}
        if self.deprecated:
            status["deprecated"] = "true"
        return status


def is_deprecated(image: dict[str, Any], now: dt.datetime) -> bool:
    """True when the image's `DeprecationTime` is at or before `now`. An image without one, or with one
    still in the future, is not deprecated (EC2 hides an AMI from listings only once that time passes:
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ami-deprecate.html)."""
    deprecation = parse_rfc3339(image.get("DeprecationTime"))
    return deprecation is not None and deprecation <= now


def order_amis(amis: Iterable[ResolvedAMI]) -> list[ResolvedAMI]:
    """Karpenter's AMI order, best first: non-deprecated before deprecated, then newest CreationDate first
    (an unparsable or missing date counts as oldest), then by name (the later name first), then by id
    (ascending) so that the order is total and deterministic. Karpenter's docs: "If multiple AMIs are
    found that can be used, Karpenter will choose the latest one"
    (https://karpenter.sh/docs/concepts/nodeclasses/#specamiselectorterms)."""
    oldest = dt.datetime.min.replace(tzinfo=dt.UTC)
    ordered = sorted(amis, key=lambda a: a.id)
    # Stable sorts, least significant key first; sort(reverse=True) keeps equal items in their order.
    ordered.sort(key=lambda a: a.name, reverse=True)
    ordered.sort(key=lambda a: parse_rfc3339(a.creation_date) or oldest, reverse=True)
    ordered.sort(key=lambda a: a.deprecated)
    return ordered


def _variant_from_name(name: str) -> str:
    """The variant an AMI selected by id, name or tags serves, read from its name (`...-neuron-...`,
    `...-nvidia-...`, AL2's `amazon-eks-gpu-node-...`)."""
    if "neuron" in name:
        return "neuron"
    return "nvidia" if "nvidia" in name or "gpu" in name else "standard"


def best_per_requirements(amis: Iterable[ResolvedAMI]) -> list[ResolvedAMI]:
    """One AMI per (arch, variant) -- the set of instance requirements an AMI serves -- the first of each in
    `order_amis`, returned in that order. So a deprecated AMI is used only when no non-deprecated AMI
    serves the same requirements, and among equals the newest wins, as in Karpenter."""
    chosen: dict[tuple[str, str], ResolvedAMI] = {}
    for ami in order_amis(amis):
        chosen.setdefault((ami.arch, ami.variant), ami)
    return list(chosen.values())


def tag_filters(tags: dict[str, str]) -> Filters:
    """EC2 filters for a tag selector; "*" matches any value of the key."""
    return [
        {"Name": "tag-key", "Values": [key]} if value == "*" else {"Name": f"tag:{key}", "Values": [value]}
        for key, value in sorted(tags.items())
    ]


T = TypeVar("T")

# The owners an amiSelectorTerms `name` term searches when it names none: public images of other accounts
# are found only when the term names their owner.
DEFAULT_NAME_OWNERS = ("self", "amazon")
# amiFamily values nodeflow can bootstrap (user data, AMI aliases).
SUPPORTED_AMI_FAMILIES = ("AL2023", "AL2", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025", "Custom")


def _one_of(names: list[str]) -> str:
    """`a, b or c`."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)


def _alias_family(node_class: EC2NodeClass, index: int, alias: str) -> str:
    """The family of the alias in amiSelectorTerms[index]; NodeClassNotReadyError when nodeflow cannot run it."""
    try:
        return parse_alias(alias)[0]
    except ValueError as error:
        family = alias.partition("@")[0]
        field = f"spec.amiSelectorTerms[{index}].alias"
        if family.lower() not in ALIAS_FAMILIES:
            detail = f'"{alias}" is not supported by nodeflow yet; use {_one_of(list(ALIAS_FAMILIES))}'
            raise NodeClassNotReadyError(f"EC2NodeClass {node_class.name}: {field}: {detail}") from error
        raise NodeClassNotReadyError(f"EC2NodeClass {node_class.name}: {field}: {error}") from error


def ami_family(node_class: EC2NodeClass) -> str:
    """The AMI family that decides the user-data format: from the alias, else spec.amiFamily. Raises
    NodeClassNotReadyError naming the field when nodeflow cannot run that family or has none."""
    for index, term in enumerate(node_class.spec.ami_selector_terms):
        if term.alias:
            family = _alias_family(node_class, index, term.alias)
            break
    else:
        if not node_class.spec.ami_family:
            raise NodeClassNotReadyError(
                f"EC2NodeClass {node_class.name}: spec.amiFamily is required when amiSelectorTerms has no alias"
            )
        family = node_class.spec.ami_family
    declared = node_class.spec.ami_family
    if declared and declared not in SUPPORTED_AMI_FAMILIES:
        raise NodeClassNotReadyError(
            f'EC2NodeClass {node_class.name}: spec.amiFamily: "{declared}" is not supported by nodeflow yet; '
            f"use {_one_of(list(SUPPORTED_AMI_FAMILIES))}"
        )
    return family


def instance_profile_name(cluster_name: str, region: str, node_class: EC2NodeClass) -> str:
    """The profile for `spec.role`: deterministic per (cluster, region, node class), at most 128 characters."""
    if node_class.spec.instance_profile:
        return node_class.spec.instance_profile
    return generated_profile_name(cluster_name, region, node_class.name)


def generated_profile_name(cluster_name: str, region: str, node_class_name: str) -> str:
    """The name of the profile nodeflow creates for a node class's `spec.role`."""
    digest = hashlib.sha256(f"{region}/{node_class_name}".encode()).hexdigest()[:16]
    return f"{cluster_name[:100]}_{digest}"


class NodeClassResolver:
    """Reads EC2 and SSM to resolve node classes for one cluster."""

    def __init__(
        self,
        ec2: EC2API,
        ssm: SSMAPI,
        cluster_name: str,
        region: str,
        kubernetes_version: str,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        """`now`: the wall clock that decides whether an AMI's DeprecationTime has passed."""
        self._ec2 = ec2
        self._now = now
        self._ssm = ssm
        self._cluster = cluster_name
        self._region = region
        self._k8s = kubernetes_version

    def resolve(self, node_class: EC2NodeClass) -> ResolvedNodeClass:
        """Everything the launch needs. Raises NodeClassNotReadyError naming what matched nothing (the
        first of subnets, security groups and AMIs; each is looked at, and the error's `conditions` say
        which failed, as Karpenter's SubnetsReady, SecurityGroupsReady and AMIsReady do), or the field
        nodeflow cannot support (checked first, before any call: AMIsReady)."""
        try:
            ami_family(node_class)
        except NodeClassNotReadyError as error:
            readiness = {AMIS_READY: ("False", "AMIFamilyNotSupported", str(error))}
            raise NodeClassNotReadyError(str(error), readiness) from error
        parts: dict[str, PartReadiness] = {}

        def part(condition: str, reason: str, read: Callable[[], T]) -> T | None:
            try:
                found = read()
            except NodeClassNotReadyError as error:
                parts[condition] = ("False", reason, str(error))
                return None
            parts[condition] = ("True", condition, "")
            return found

        subnets = part(SUBNETS_READY, "SubnetsNotFound", lambda: self.subnets(node_class))
        groups = part(SECURITY_GROUPS_READY, "SecurityGroupsNotFound", lambda: self.security_groups(node_class))
        amis = part(AMIS_READY, "AMINotFound", lambda: self.amis(node_class))
        if subnets is None or groups is None or amis is None:
            first = next(message for status, _, message in parts.values() if status == "False")
            raise NodeClassNotReadyError(first, parts)
        return ResolvedNodeClass(
            subnets=subnets,
            security_groups=groups,
            amis=[ami.as_status() for ami in amis],
            instance_profile=instance_profile_name(self._cluster, self._region, node_class),
            placement_group_id=group.id if (group := self.placement_group(node_class)) else "",
            conditions=parts,
        )

    def placement_group(self, node_class: EC2NodeClass) -> PlacementGroup | None:
        """The group spec.placementGroupSelector names (None without a selector); NodeClassNotReadyError
        when no available group matches."""
        return resolve_placement_group(self._ec2, node_class)

    def subnets(self, node_class: EC2NodeClass) -> list[dict[str, str]]:
        found: dict[str, dict[str, Any]] = {}
        for term in node_class.spec.subnet_selector_terms:
            kwargs = {"SubnetIds": [term.id]} if term.id else {"Filters": tag_filters(term.tags or {})}
            for subnet in self._describe("DescribeSubnets", self._ec2.describe_subnets, "Subnets", **kwargs):
                if subnet.get("State", "available") == "available":
                    found[subnet["SubnetId"]] = subnet
        if not found:
            raise self._not_ready(node_class, "subnetSelectorTerms", "subnet")
        ordered = sorted(
            found.values(),
            key=lambda s: (s["AvailabilityZone"], -int(s.get("AvailableIpAddressCount", 0)), s["SubnetId"]),
        )
        return [
            {"id": s["SubnetId"], "zone": s["AvailabilityZone"], "zoneID": s.get("AvailabilityZoneId", "")}
            for s in ordered
        ]

    def security_groups(self, node_class: EC2NodeClass) -> list[dict[str, str]]:
        found: dict[str, str] = {}
        for term in node_class.spec.security_group_selector_terms:
            if term.id:
                kwargs: dict[str, Any] = {"GroupIds": [term.id]}
            else:
                filters = tag_filters(term.tags or {})
                if term.name:
                    filters.append({"Name": "group-name", "Values": [term.name]})
                kwargs = {"Filters": filters}
            for group in self._describe(
                "DescribeSecurityGroups", self._ec2.describe_security_groups, "SecurityGroups", **kwargs
            ):
                found[group["GroupId"]] = group.get("GroupName", "")
        if not found:
            raise self._not_ready(node_class, "securityGroupSelectorTerms", "security group")
        return [{"id": gid, "name": found[gid]} for gid in sorted(found)]

    def amis(self, node_class: EC2NodeClass) -> list[ResolvedAMI]:
        """The AMIs the terms match, one per (arch, variant), best first (`best_per_requirements`).

        Deprecated AMIs are asked for too (every DescribeImages call sets IncludeDeprecated; EC2 returns a
        deprecated AMI named by id anyway) and marked, then ranked after every non-deprecated one: a
        deprecated AMI is used only when nothing else serves the same requirements, e.g. when pinned by
        id. Raises NodeClassNotReadyError when nothing matches."""
        family = ami_family(node_class)
        terms = node_class.spec.ami_selector_terms or self._family_default_terms(node_class, family)
        candidates: list[ResolvedAMI] = []
        for index, term in enumerate(terms):
            if term.alias:
                candidates += self._alias_amis(node_class, index, term.alias)
            elif term.ssm_parameter:
                image_id = self._parameter(term.ssm_parameter)
                candidates += self._images(ImageIds=[image_id]) if image_id else []
            else:
                candidates += self._images(**self._image_query(term.id, term.name, term.owner, term.tags))
        chosen = best_per_requirements(candidates)
        if not chosen:
            raise self._not_ready(node_class, "amiSelectorTerms", "AMI")
        return chosen

    def _family_default_terms(self, node_class: EC2NodeClass, family: str) -> list[AMISelectorTerm]:
        """A node class with `amiFamily` and no `amiSelectorTerms` runs the family's latest AMIs (the alias
        `<family>@latest`); a Custom family has none and is not ready, naming the field."""
        alias = next((name for name, known in ALIAS_FAMILIES.items() if known == family), None)
        if alias is None:
            raise NodeClassNotReadyError(
                f"EC2NodeClass {node_class.name}: spec.amiSelectorTerms is empty and amiFamily {family} has no "
                "default AMIs; select the AMIs with an id, name, tags or ssmParameter term"
            )
        return [AMISelectorTerm(alias=f"{alias}@latest")]

    def _alias_amis(self, node_class: EC2NodeClass, index: int, alias: str) -> list[ResolvedAMI]:
        """The AMIs the alias's SSM parameters name, each with the (arch, variant) of its parameter. Raises
        NodeClassNotReadyError naming amiSelectorTerms[index] when the cluster's Kubernetes version cannot
        use the alias."""
        try:
            parameters = alias_parameters(alias, self._k8s)
        except ValueError as error:
            raise NodeClassNotReadyError(
                f"EC2NodeClass {node_class.name}: spec.amiSelectorTerms[{index}].alias: {error}"
            ) from error
        values: dict[str, str | None] = {}
        served: dict[str, list[tuple[str, str]]] = {}
        for param in parameters:
            if param.name not in values:
                values[param.name] = self._parameter(param.name)
            image_id = values[param.name]
            if image_id:
                served.setdefault(image_id, []).append((param.arch, param.variant))
        if not served:
            return []
        return [
            ResolvedAMI(ami.id, ami.name, arch, variant, ami.creation_date, ami.deprecated)
            for ami in self._images(ImageIds=sorted(served))
            for arch, variant in served[ami.id]
        ]

    @staticmethod
    def _image_query(
        image_id: str | None, name: str | None, owner: str | None, tags: dict[str, str] | None
    ) -> dict[str, Any]:
        """DescribeImages arguments for one id/name/owner/tags term: the id alone, else tag and name
        filters and the owner. A name without an owner asks for the account's own and Amazon's images
        only (DEFAULT_NAME_OWNERS), as Karpenter does: any account can make a public image of any name."""
        if image_id:
            return {"ImageIds": [image_id]}
        query: dict[str, Any] = {"Filters": tag_filters(tags or {})}
        if name:
            query["Filters"].append({"Name": "name", "Values": [name]})
        if owner:
            query["Owners"] = [owner]
        elif name:
            query["Owners"] = list(DEFAULT_NAME_OWNERS)
        return query

    def _images(self, **kwargs: Any) -> list[ResolvedAMI]:
        """The available images DescribeImages returns for `kwargs`, deprecated ones included and marked."""
        images = self._describe("DescribeImages", self._ec2.describe_images, "Images", IncludeDeprecated=True, **kwargs)
        now = self._now()
        out = []
        for image in images:
            if image.get("State", "available") != "available":
                continue
            variant = _variant_from_name(image.get("Name", ""))
            arch = image.get("Architecture", "x86_64")
            out.append(
                ResolvedAMI(
                    image["ImageId"],
                    image.get("Name", ""),
                    arch,
                    variant,
                    image.get("CreationDate", ""),
                    is_deprecated(image, now),
                )
            )
        return out

    def _parameter(self, name: str) -> str | None:
        try:
            return str(call("GetParameter", self._ssm.get_parameter, Name=name)["Parameter"]["Value"])
        except CloudProviderError as error:
            if has_code(error, "ParameterNotFound"):
                return None
            raise

    @staticmethod
    def _describe(operation: str, fn: Any, key: str, **kwargs: Any) -> list[dict[str, Any]]:
        try:
            return list(call(operation, fn, **kwargs).get(key, []))
        except CloudProviderError as error:
            if has_code(error, "InvalidSubnetID.*", "InvalidGroup.*", "InvalidGroupId.*", "InvalidAMIID.*"):
                return []  # an id selector that matches nothing is "not ready", not a crash
            raise

    @staticmethod
    def _not_ready(node_class: EC2NodeClass, field: str, what: str) -> NodeClassNotReadyError:
        terms = getattr(node_class.spec, _SNAKE[field])
        shown = [t.model_dump(by_alias=True, exclude_none=True) for t in terms]
        return NodeClassNotReadyError(
            f"EC2NodeClass {node_class.name}: no {what} matches spec.{field} {shown}; "
            f"fix the selector or tag the {what} (e.g. karpenter.sh/discovery)"
        )


_SNAKE = {
    "subnetSelectorTerms": "subnet_selector_terms",
    "securityGroupSelectorTerms": "security_group_selector_terms",
    "amiSelectorTerms": "ami_selector_terms",
}
