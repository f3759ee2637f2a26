"""EC2NodeClass.static_hash: what changes it (static fields) and what does not (selector terms, the
amiFamily an alias already implies, key order)."""

from __future__ import annotations

from typing import Any

import pytest

from apis.ec2nodeclass import EC2NodeClass


def node_class(**spec: Any) -> EC2NodeClass:
    base: dict[str, Any] = {
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "tags": {"team": "a", "env": "prod"},
    }
    return EC2NodeClass.model_validate({"metadata": {"name": "default"}, "spec": {**base, **spec}})


BASE = node_class().static_hash()


@pytest.mark.parametrize(
    "change",
    [
        {"userData": "#!/bin/bash\necho hi"},
        {"tags": {"team": "b", "env": "prod"}},
        {"detailedMonitoring": True},
        {"metadataOptions": {"httpTokens": "optional"}},
        {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}}]},
        {"amiSelectorTerms": [{"id": "ami-0123456789abcdef0"}], "amiFamily": "AL2"},  # another family
    ],
)
def test_a_static_field_change_changes_the_hash(change: dict[str, Any]) -> None:
    assert node_class(**change).static_hash() != BASE


@pytest.mark.parametrize(
    "change",
    [
        {"subnetSelectorTerms": [{"id": "subnet-0123"}]},
        {"securityGroupSelectorTerms": [{"id": "sg-0123"}]},
        {"amiSelectorTerms": [{"id": "ami-0123456789abcdef0"}], "amiFamily": "AL2023"},  # the same family
        {"tags": {"env": "prod", "team": "a"}},
    ],
)
def test_dynamic_fields_and_equivalent_specs_keep_the_hash(change: dict[str, Any]) -> None:
    assert node_class(**change).static_hash() == BASE
