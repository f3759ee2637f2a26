"""Which launch templates and instance profiles are nodeflow's to delete (pure decisions of
cloudprovider.aws.launch.launchtemplate and cloudprovider.aws.nodeclass.instanceprofile)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cloudprovider.aws.launch.launchtemplate import TAG_NODECLASS_HASH, is_owned, is_stale
from cloudprovider.aws.nodeclass.instanceprofile import is_owned as profile_is_owned
from cloudprovider.aws.nodeclass.instanceprofile import profile_tags

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MIN_AGE = timedelta(minutes=2)


def template(
    node_class: str = "default",
    hash_: str | None = "111",
    name: str = "karpenter.k8s.aws/abc",
    age: timedelta = MIN_AGE,
) -> dict[str, Any]:
    tags = {"kubernetes.io/cluster/prod": "owned", "karpenter.k8s.aws/ec2nodeclass": node_class}
    if hash_ is not None:
        tags[TAG_NODECLASS_HASH] = hash_
    return {
        "LaunchTemplateId": "lt-1",
        "LaunchTemplateName": name,
        "CreateTime": NOW - age,
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }


def test_a_template_is_nodeflows_only_with_its_name_prefix_cluster_node_class_and_hash_tags() -> None:
    assert is_owned(template(), "prod")
    assert not is_owned(template(), "staging")
    assert not is_owned(template(hash_=None), "prod")  # e.g. one Karpenter made
    assert not is_owned(template(name="my-template"), "prod")
    assert not is_owned(template(node_class=""), "prod")


def test_a_template_is_stale_when_its_node_class_is_gone_or_has_another_hash_and_it_is_old_enough() -> None:
    current = {"default": "111", "broken": None}
    assert not is_stale(template(), current, NOW, MIN_AGE)
    assert is_stale(template(hash_="000"), current, NOW, MIN_AGE)
    assert is_stale(template(node_class="gone"), current, NOW, MIN_AGE)
    assert not is_stale(template(node_class="gone", age=timedelta(seconds=30)), current, NOW, MIN_AGE)
    assert not is_stale(template(node_class="broken", hash_="000"), current, NOW, MIN_AGE)  # hash unknown
    assert not is_stale({**template(node_class="gone"), "CreateTime": None}, current, NOW, MIN_AGE)


def profile(tags: dict[str, str]) -> dict[str, Any]:
    return {"InstanceProfileName": "p", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


def test_a_profile_is_nodeflows_only_with_the_cluster_region_and_node_class_tags() -> None:
    tags = profile_tags("prod", "eu-west-1", "default")
    assert tags == {
        "kubernetes.io/cluster/prod": "owned",
        "eks:eks-cluster-name": "prod",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "topology.kubernetes.io/region": "eu-west-1",
    }
    assert profile_is_owned(profile(tags), "prod", "eu-west-1", "default")
    assert not profile_is_owned(profile(tags), "prod", "eu-west-1", "other")
    assert not profile_is_owned(profile(tags), "staging", "eu-west-1", "default")
    assert not profile_is_owned(profile(tags), "prod", "us-east-1", "default")  # the same name in another region
    assert not profile_is_owned({"InstanceProfileName": "users", "Tags": []}, "prod", "eu-west-1", "default")
    assert not profile_is_owned({"InstanceProfileName": "users"}, "prod", "eu-west-1", "default")


def test_a_profile_karpenter_v1_made_for_the_node_class_is_recognised() -> None:
    """Karpenter v1 tags its profiles with the node class's spec.tags and the same four tags
    (EC2NodeClass.InstanceProfileTags); nodeflow takes over such a node class's profile."""
    karpenters = {
        "team": "web",
        "kubernetes.io/cluster/prod": "owned",
        "eks:eks-cluster-name": "prod",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "topology.kubernetes.io/region": "eu-west-1",
    }
    assert profile_is_owned(profile(karpenters), "prod", "eu-west-1", "default")


def test_spec_tags_are_on_the_profile_but_cannot_override_the_ownership_tags() -> None:
    spec_tags = {"team": "web", "eks:eks-cluster-name": "other", "kubernetes.io/cluster/prod": "shared"}
    tags = profile_tags("prod", "eu-west-1", "default", spec_tags)
    assert tags["team"] == "web"
    assert (tags["eks:eks-cluster-name"], tags["kubernetes.io/cluster/prod"]) == ("prod", "owned")
