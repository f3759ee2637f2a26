"""Which AMIs amiSelectorTerms resolve to, as Karpenter chooses them: deprecated AMIs are asked for and
ranked after every non-deprecated one (so used only when nothing else serves the same requirements), then
newest CreationDate first, then name, then id; one AMI per (arch, variant).

https://karpenter.sh/docs/concepts/nodeclasses/#specamiselectorterms
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from cloudprovider.aws.nodeclass.resolve import (
    NodeClassResolver,
    ResolvedAMI,
    best_per_requirements,
    is_deprecated,
    order_amis,
)
from cloudprovider.errors import NodeClassNotReadyError
from tests.unit.cloudprovider.builders import node_class

NOW = dt.datetime(2025, 9, 1, tzinfo=dt.UTC)
PAST = "2025-08-01T00:00:00.000Z"
FUTURE = "2026-01-01T00:00:00.000Z"


def image(ami_id: str, name: str, created: str, arch: str = "x86_64", deprecation: str | None = None) -> dict[str, Any]:
    """A DescribeImages entry; `deprecation` is its DeprecationTime."""
    entry: dict[str, Any] = {
        "ImageId": ami_id,
        "Name": name,
        "Architecture": arch,
        "CreationDate": created,
        "State": "available",
    }
    if deprecation:
        entry["DeprecationTime"] = deprecation
    return entry


class FakeEC2:
    """DescribeImages over `images`: by id, else by the `name` filter (exact); records every call."""

    def __init__(self, images: list[dict[str, Any]]) -> None:
        self.images = images
        self.calls: list[dict[str, Any]] = []

    def describe_images(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if kwargs.get("ImageIds"):
            return {"Images": [i for i in self.images if i["ImageId"] in kwargs["ImageIds"]]}
        names = [v for f in kwargs.get("Filters", []) if f["Name"] == "name" for v in f["Values"]]
        return {"Images": [i for i in self.images if not names or i["Name"] in names]}


def resolver(images: list[dict[str, Any]]) -> tuple[NodeClassResolver, FakeEC2]:
    ec2 = FakeEC2(images)
    return NodeClassResolver(ec2, object(), "c", "us-west-2", "1.32", now=lambda: NOW), ec2  # type: ignore[arg-type]


def custom(*terms: dict[str, Any]) -> Any:
    return node_class(amiFamily="AL2023", amiSelectorTerms=list(terms))


def ami(ami_id: str, name: str = "n", created: str = "2025-01-01T00:00:00.000Z", **kw: Any) -> ResolvedAMI:
    return ResolvedAMI(ami_id, name, kw.pop("arch", "x86_64"), kw.pop("variant", "standard"), created, **kw)


@pytest.mark.parametrize(
    ("deprecation", "expected"),
    [(None, False), (PAST, True), (FUTURE, False), ("2025-09-01T00:00:00.000Z", True), ("garbage", False)],
)
def test_an_ami_is_deprecated_once_its_deprecation_time_has_passed(deprecation: str | None, expected: bool) -> None:
    assert is_deprecated(image("ami-1", "a", "2025-01-01T00:00:00.000Z", deprecation=deprecation), NOW) is expected


def test_order_puts_non_deprecated_first_then_newest_then_name_then_id() -> None:
    amis = [
        ami("ami-old", created="2024-01-01T00:00:00.000Z"),
        ami("ami-dep-new", created="2025-06-01T00:00:00.000Z", deprecated=True),
        ami("ami-b", name="b", created="2025-03-01T00:00:00.000Z"),
        ami("ami-a", name="a", created="2025-03-01T00:00:00.000Z"),
        ami("ami-2", name="a", created="2025-03-01T00:00:00.000Z"),
        ami("ami-nodate", created=""),
        ami("ami-dep-old", created="2024-06-01T00:00:00.000Z", deprecated=True),
    ]
    expected = ["ami-b", "ami-2", "ami-a", "ami-old", "ami-nodate", "ami-dep-new", "ami-dep-old"]
    assert [a.id for a in order_amis(amis)] == expected
    assert [a.id for a in order_amis(reversed(amis))] == expected  # deterministic whatever the input order


def test_one_ami_per_arch_and_variant_the_best_of_each_in_order() -> None:
    amis = [
        ami("ami-x-old", created="2024-01-01T00:00:00.000Z"),
        ami("ami-x-new", created="2025-01-01T00:00:00.000Z"),
        ami("ami-arm", arch="arm64", created="2025-02-01T00:00:00.000Z"),
        ami("ami-gpu-dep", variant="nvidia", created="2025-03-01T00:00:00.000Z", deprecated=True),
    ]
    assert [a.id for a in best_per_requirements(amis)] == ["ami-arm", "ami-x-new", "ami-gpu-dep"]


def test_name_selection_skips_a_newer_deprecated_ami_for_a_non_deprecated_one() -> None:
    images = [
        image("ami-current", "team-ami", "2025-01-01T00:00:00.000Z"),
        image("ami-deprecated", "team-ami", "2025-06-01T00:00:00.000Z", deprecation=PAST),
        image("ami-soon", "team-ami", "2024-12-01T00:00:00.000Z", deprecation=FUTURE),
    ]
    nc_resolver, ec2 = resolver(images)
    chosen = nc_resolver.amis(custom({"name": "team-ami"}))
    assert [a.id for a in chosen] == ["ami-current"]
    assert all(call.get("IncludeDeprecated") is True for call in ec2.calls)


def test_a_deprecated_ami_is_used_when_nothing_else_serves_its_requirements() -> None:
    images = [
        image("ami-deprecated", "team-ami", "2025-06-01T00:00:00.000Z", deprecation=PAST),
        image("ami-arm", "team-ami", "2025-01-01T00:00:00.000Z", arch="arm64"),
    ]
    nc_resolver, _ = resolver(images)
    chosen = nc_resolver.amis(custom({"name": "team-ami"}))
    assert [(a.id, a.deprecated) for a in chosen] == [("ami-arm", False), ("ami-deprecated", True)]
    assert chosen[1].as_status()["deprecated"] == "true"
    assert "deprecated" not in chosen[0].as_status()


def test_a_deprecated_ami_pinned_by_id_is_chosen() -> None:
    images = [
        image("ami-current", "team-ami", "2025-01-01T00:00:00.000Z"),
        image("ami-deprecated", "old-ami", "2024-06-01T00:00:00.000Z", deprecation=PAST),
    ]
    nc_resolver, ec2 = resolver(images)
    chosen = nc_resolver.amis(custom({"id": "ami-deprecated"}))
    assert [(a.id, a.deprecated) for a in chosen] == [("ami-deprecated", True)]
    assert ec2.calls == [{"ImageIds": ["ami-deprecated"], "IncludeDeprecated": True}]


def test_pinned_deprecated_and_selected_current_amis_of_one_arch_give_the_current_one() -> None:
    images = [
        image("ami-current", "team-ami", "2024-01-01T00:00:00.000Z"),
        image("ami-deprecated", "old-ami", "2025-06-01T00:00:00.000Z", deprecation=PAST),
    ]
    nc_resolver, _ = resolver(images)
    chosen = nc_resolver.amis(custom({"id": "ami-deprecated"}, {"name": "team-ami"}))
    assert [a.id for a in chosen] == ["ami-current"]


def test_nothing_matching_is_still_not_ready() -> None:
    nc_resolver, _ = resolver([])
    with pytest.raises(NodeClassNotReadyError, match="amiSelectorTerms"):
        nc_resolver.amis(custom({"name": "team-ami"}))


def test_a_name_without_an_owner_searches_only_this_account_and_amazon() -> None:
    nc_resolver, ec2 = resolver([image("ami-current", "team-ami", "2025-01-01T00:00:00.000Z")])
    nc_resolver.amis(custom({"name": "team-ami"}))
    nc_resolver.amis(custom({"name": "team-ami", "owner": "123456789012"}))
    nc_resolver.amis(custom({"tags": {"team": "a"}}))
    assert [call.get("Owners") for call in ec2.calls] == [["self", "amazon"], ["123456789012"], None]
