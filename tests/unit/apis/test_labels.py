"""Well-known labels and Karpenter's restricted-label rules."""

from __future__ import annotations

import pytest
import yaml

from apis import labels
from tests.unit.apis.builders import reference_dir


@pytest.mark.parametrize(
    "key",
    ["team", "example.com/team", "node.kubernetes.io/role", "node-restriction.kubernetes.io/x", "kops.k8s.io/ig",
     labels.ZONE, labels.INSTANCE_TYPE, labels.CAPACITY_TYPE, labels.NODEPOOL, labels.INSTANCE_FAMILY,
     labels.CAPACITY_RESERVATION_ID, labels.NODECLASS, labels.ZONE_ID],
)  # fmt: skip
def test_allowed_keys_have_no_reason(key: str) -> None:
    assert labels.restricted_label_reason(key) is None


@pytest.mark.parametrize(
    ("key", "words"),
    [(labels.HOSTNAME, 'label "kubernetes.io/hostname" is restricted'),
     ("karpenter.sh/team", 'label domain "karpenter.sh" is restricted'),
     ("karpenter.k8s.aws/instance-colour", 'label domain "karpenter.k8s.aws" is restricted'),
     ("topology.kubernetes.io/rack", 'label domain "kubernetes.io" is restricted'),
     ("kubernetes.io/team", 'label domain "kubernetes.io" is restricted'),
     ("example.k8s.io/x", 'label domain "k8s.io" is restricted')],
)  # fmt: skip
def test_restricted_keys_say_why_and_what_to_use(key: str, words: str) -> None:
    reason = labels.restricted_label_reason(key)
    assert reason is not None and reason.startswith(words)


def test_nodepool_label_is_restricted_only_in_nodepools() -> None:
    assert labels.restricted_label_reason(labels.NODEPOOL) is None
    assert labels.nodepool_label_reason(labels.NODEPOOL) == (
        'label "karpenter.sh/nodepool" is restricted; Karpenter sets it to the NodePool\'s name, remove it'
    )


def test_well_known_labels_are_restricted_node_labels() -> None:
    assert all(labels.is_restricted_node_label(key) for key in labels.WELL_KNOWN_LABELS)
    assert not labels.is_restricted_node_label("example.com/team")


def test_deprecated_labels_are_normalized() -> None:
    assert labels.normalize_label("beta.kubernetes.io/arch") == labels.ARCH
    assert labels.normalize_label("failure-domain.beta.kubernetes.io/zone") == labels.ZONE
    assert labels.normalize_label("team") == "team"


def test_aws_well_known_labels_match_the_nodepool_crd_allow_list() -> None:
    crd = yaml.safe_load((reference_dir() / "karpenter-crds" / "karpenter.sh_nodepools.yaml").read_text())
    rule_text = str(crd)
    allow_list = {
        key for key in rule_text.replace('"', " ").replace("'", " ").split() if key.startswith("karpenter.k8s.aws/")
    }
    allow_list = {key.rstrip(",]") for key in allow_list}
    assert allow_list == {key for key in labels.WELL_KNOWN_LABELS if key.startswith("karpenter.k8s.aws/")}
