"""Invalid NodePools, NodeClaims and EC2NodeClasses are rejected at the right field, saying how to fix it."""

from __future__ import annotations

from typing import Any

import pytest

from apis.errors import ApiValidationError
from apis.manifests import parse_api_object
from apis.nodepool import is_managed
from tests.unit.apis.builders import DELETE, ec2nodeclass_doc, nodeclaim_doc, nodepool_doc, with_value

REQ = "spec.template.spec.requirements"
LABELS = "spec.template.metadata.labels"
TAINTS = "spec.template.spec.taints"
BUDGETS = "spec.disruption.budgets"


def requirement(key: str, operator: str = "Exists", values: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator, **extra}
    if values is not None:
        out["values"] = values
    return out


# (case, path to set, value, field reported, words the message must contain)
NODEPOOL_CASES: list[tuple[str, str, Any, str, str]] = [
    ("unknown operator", f"{REQ}.0", requirement("kubernetes.io/arch", "Equals", ["amd64"]), f"{REQ}[0].operator",
     'unknown operator "Equals"; use one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte'),
    ("karpenter.sh domain key", f"{REQ}.0", requirement("karpenter.sh/team"), f"{REQ}[0].key",
     'label domain "karpenter.sh" is restricted'),
    ("nodepool label as requirement", f"{REQ}.0", requirement("karpenter.sh/nodepool", "In", ["a"]), f"{REQ}[0].key",
     'label "karpenter.sh/nodepool" is restricted'),
    ("hostname requirement", f"{REQ}.0", requirement("kubernetes.io/hostname", "In", ["a"]), f"{REQ}[0].key",
     'label "kubernetes.io/hostname" is restricted'),
    ("karpenter.k8s.aws domain key", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-colour"), f"{REQ}[0].key",
     'label domain "karpenter.k8s.aws" is restricted'),
    ("kubernetes.io subdomain key", f"{REQ}.0", requirement("topology.kubernetes.io/rack"), f"{REQ}[0].key",
     'label domain "kubernetes.io" is restricted'),
    ("k8s.io subdomain key", f"{REQ}.0", requirement("example.k8s.io/x"), f"{REQ}[0].key",
     'label domain "k8s.io" is restricted'),
    ("malformed requirement key", f"{REQ}.0", requirement("Example.com/x"), f"{REQ}[0].key", "invalid label key"),
    ("In without values", f"{REQ}.0", requirement("kubernetes.io/arch", "In", []), f"{REQ}[0].values",
     "operator In needs at least one value"),
    ("Gt with two values", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-cpu", "Gt", ["1", "2"]),
     f"{REQ}[0].values", "operator Gt needs exactly one value, a non-negative integer"),
    ("Lt with a fraction", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-cpu", "Lt", ["1.5"]),
     f"{REQ}[0].values", "operator Lt needs exactly one value"),
    ("Gte with a word", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-cpu", "Gte", ["four"]),
     f"{REQ}[0].values", "operator Gte needs exactly one value"),
    ("Lte without values", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-cpu", "Lte"), f"{REQ}[0].values",
     "operator Lte needs exactly one value"),
    ("minValues above the values", f"{REQ}.0", requirement("kubernetes.io/arch", "In", ["amd64", "arm64"], minValues=3),
     f"{REQ}[0].minValues", "minValues 3 is more than the 2 values given"),
    ("minValues above 50", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-family", minValues=51),
     f"{REQ}[0].minValues", "must be at most 50, got 51"),
    ("invalid requirement value", f"{REQ}.0", requirement("kubernetes.io/arch", "In", ["amd 64"]),
     f"{REQ}[0].values[0]", 'invalid label value "amd 64"'),
    ("restricted template label", LABELS, {"karpenter.sh/team": "a"}, f"{LABELS}[karpenter.sh/team]",
     'label domain "karpenter.sh" is restricted'),
    ("hostname template label", LABELS, {"kubernetes.io/hostname": "a"}, f"{LABELS}[kubernetes.io/hostname]",
     'label "kubernetes.io/hostname" is restricted'),
    ("nodepool template label", LABELS, {"karpenter.sh/nodepool": "a"}, f"{LABELS}[karpenter.sh/nodepool]",
     'label "karpenter.sh/nodepool" is restricted'),
    ("malformed template label key", LABELS, {"bad key": "a"}, f"{LABELS}[bad key]", 'invalid label key "bad key"'),
    ("malformed template label value", LABELS, {"team": "-web"}, f"{LABELS}.team", 'invalid label value "-web"'),
    ("expireAfter in days", "spec.template.spec.expireAfter", "30d", "spec.template.spec.expireAfter",
     'invalid duration "30d": use whole numbers with the units s, m or h'),
    ("fractional consolidateAfter", "spec.disruption.consolidateAfter", "1.5h", "spec.disruption.consolidateAfter",
     'invalid duration "1.5h"'),
    ("terminationGracePeriod Never", "spec.template.spec.terminationGracePeriod", "Never",
     "spec.template.spec.terminationGracePeriod", '"Never" is not allowed here'),
    ("budget duration in seconds", BUDGETS, [{"nodes": "1", "schedule": "@daily", "duration": "30s"}],
     f"{BUDGETS}[0].duration", 'invalid budget duration "30s"'),
    ("budget schedule without duration", BUDGETS, [{"nodes": "1", "schedule": "@daily"}], f"{BUDGETS}[0].duration",
     "'schedule' must be set with 'duration'"),
    ("budget duration without schedule", BUDGETS, [{"nodes": "1", "duration": "1h"}], f"{BUDGETS}[0].duration",
     "'schedule' must be set with 'duration'"),
    ("budget nodes over 100%", BUDGETS, [{"nodes": "101%"}], f"{BUDGETS}[0].nodes", 'invalid budget nodes "101%"'),
    ("budget nodes as a word", BUDGETS, [{"nodes": "ten"}], f"{BUDGETS}[0].nodes", 'use a count such as "5"'),
    ("budget schedule not cron", BUDGETS, [{"nodes": "1", "schedule": "daily", "duration": "1h"}],
     f"{BUDGETS}[0].schedule", "five-field cron expression"),
    ("budget reason unknown", BUDGETS, [{"nodes": "1", "reasons": ["Expired"]}], f"{BUDGETS}[0].reasons[0]",
     'unknown value "Expired"; use one of Underutilized, Empty, Drifted'),
    ("weight zero", "spec.weight", 0, "spec.weight", "must be at least 1, got 0"),
    ("weight over 100", "spec.weight", 101, "spec.weight", "must be at most 100, got 101"),
    ("unknown consolidation policy", "spec.disruption.consolidationPolicy", "Sometimes",
     "spec.disruption.consolidationPolicy", "use one of WhenEmpty, WhenEmptyOrUnderutilized, Balanced"),
    ("bad limit quantity", "spec.limits", {"cpu": "lots"}, "spec.limits.cpu", 'invalid quantity "lots"'),
    ("taint key malformed", f"{TAINTS}.0", {"key": "a b", "effect": "NoSchedule"}, f"{TAINTS}[0].key",
     'invalid taint key "a b"'),
    ("taint value malformed", f"{TAINTS}.0", {"key": "a", "value": "b c", "effect": "NoSchedule"},
     f"{TAINTS}[0].value", 'invalid taint value "b c"'),
    ("taint effect unknown", f"{TAINTS}.0", {"key": "a", "effect": "NoWay"}, f"{TAINTS}[0].effect",
     'unknown taint effect "NoWay"; use one of NoSchedule, PreferNoSchedule, NoExecute'),
    ("nodeClassRef missing", "spec.template.spec.nodeClassRef", DELETE, "spec.template.spec.nodeClassRef",
     "required field is missing"),
    ("nodeClassRef group empty", "spec.template.spec.nodeClassRef.group", "",
     "spec.template.spec.nodeClassRef.group", "group may not be empty"),
    ("nodeClassRef kind empty", "spec.template.spec.nodeClassRef.kind", "",
     "spec.template.spec.nodeClassRef.kind", "kind may not be empty"),
    ("nodeClassRef name missing", "spec.template.spec.nodeClassRef.name", DELETE,
     "spec.template.spec.nodeClassRef.name", "required field is missing"),
    ("nodeClassRef group with version", "spec.template.spec.nodeClassRef.group", "karpenter.k8s.aws/v1",
     "spec.template.spec.nodeClassRef.group", "without a version"),
    ("unknown capacity type", f"{REQ}.0", requirement("karpenter.sh/capacity-type", "In", ["preemptible"]),
     f"{REQ}[0].values", "is a known value of karpenter.sh/capacity-type; use one of on-demand, spot, reserved"),
    ("duplicate taint", TAINTS, [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "b",
     "effect": "NoSchedule"}],
     f"{TAINTS}[1]", "duplicate taint Key/Effect pair a=NoSchedule"),
    ("startup taint repeating a taint", "spec.template.spec.startupTaints", [{"key": "example.com/dedicated",
     "effect": "NoSchedule"}], "spec.template.spec.startupTaints[0]", "duplicate taint Key/Effect pair"),
    ("misspelt field", "spec.template.spec.nodeClasRef", {}, "spec.template.spec.nodeClasRef",
     'unknown field "nodeClasRef"; did you mean "nodeClassRef"?'),
]  # fmt: skip

EC2_CASES: list[tuple[str, str, Any, str, str]] = [
    ("no alias and no amiFamily", "spec.amiSelectorTerms", [{"id": "ami-123"}], "spec.amiFamily",
     "must specify amiFamily if amiSelectorTerms does not contain an alias"),
    ("no AMI terms and no amiFamily", "spec.amiSelectorTerms", DELETE, "spec.amiFamily", "must specify amiFamily"),
    ("alias without version", "spec.amiSelectorTerms", [{"alias": "al2023"}], "spec.amiSelectorTerms[0].alias",
     "must match the format 'family@version'"),
    ("alias of unknown family", "spec.amiSelectorTerms", [{"alias": "ubuntu@latest"}],
     "spec.amiSelectorTerms[0].alias", 'family "ubuntu" is not supported'),
    ("windows alias pinned", "spec.amiSelectorTerms", [{"alias": "windows2022@v1"}],
     "spec.amiSelectorTerms[0].alias", "windows families may only specify version 'latest'"),
    ("alias with another term", "spec.amiSelectorTerms", [{"alias": "al2023@latest"}, {"id": "ami-1"}],
     "spec.amiSelectorTerms", "'alias' is mutually exclusive"),
    ("alias with tags", "spec.amiSelectorTerms", [{"alias": "al2023@latest", "tags": {"a": "b"}}],
     "spec.amiSelectorTerms[0].alias", "'alias' is mutually exclusive"),
    ("AMI id with name", "spec.amiSelectorTerms", [{"id": "ami-1", "name": "x"}], "spec.amiSelectorTerms[0].id",
     "'id' is mutually exclusive"),
    ("empty AMI term", "spec.amiSelectorTerms", [{}], "spec.amiSelectorTerms[0]", "expected at least one, got none"),
    ("amiFamily contradicting alias", "spec.amiFamily", "AL2", "spec.amiFamily",
     "amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"),
    ("empty subnet term", "spec.subnetSelectorTerms", [{}], "spec.subnetSelectorTerms[0]",
     "expected at least one, got none, ['tags', 'id']"),
    ("subnet id with tags", "spec.subnetSelectorTerms", [{"id": "subnet-1", "tags": {"a": "b"}}],
     "spec.subnetSelectorTerms[0].id", "'id' is mutually exclusive"),
    ("malformed subnet id", "spec.subnetSelectorTerms", [{"id": "sub-1"}], "spec.subnetSelectorTerms[0].id",
     'invalid subnet id "sub-1"'),
    ("no subnet terms", "spec.subnetSelectorTerms", [], "spec.subnetSelectorTerms", "needs at least 1 item(s)"),
    ("empty tag value", "spec.subnetSelectorTerms", [{"tags": {"a": ""}}], "spec.subnetSelectorTerms[0].tags",
     "empty tag keys or values aren't supported"),
    ("security group id with name", "spec.securityGroupSelectorTerms", [{"id": "sg-1", "name": "web"}],
     "spec.securityGroupSelectorTerms[0].id", "'id' is mutually exclusive"),
    ("security group name with tags", "spec.securityGroupSelectorTerms", [{"name": "web", "tags": {"a": "b"}}],
     "spec.securityGroupSelectorTerms[0].name", "'name' is mutually exclusive"),
    ("role and instanceProfile", "spec.instanceProfile", "profile", "spec.role",
     "must specify exactly one of ['role', 'instanceProfile']"),
    ("neither role nor instanceProfile", "spec.role", DELETE, "spec.role", "must specify exactly one of"),
    ("empty role", "spec.role", "", "spec.role", "role cannot be empty"),
    ("cluster tag", "spec.tags", {"kubernetes.io/cluster/test": "owned"}, "spec.tags",
     "restricted tag matching kubernetes.io/cluster/"),
    ("nodepool tag", "spec.tags", {"karpenter.sh/nodepool": "a"}, "spec.tags",
     "restricted tag matching karpenter.sh/nodepool"),
    ("unknown eviction signal", "spec.kubelet", {"evictionHard": {"memory.free": "1%"}}, "spec.kubelet.evictionHard",
     "valid keys for evictionHard are"),
    ("unknown reserved resource", "spec.kubelet", {"kubeReserved": {"gpu": "1"}}, "spec.kubelet.kubeReserved",
     "valid keys for kubeReserved are ['cpu', 'memory', 'ephemeral-storage', 'pid']"),
    ("negative reservation", "spec.kubelet", {"systemReserved": {"cpu": "-1"}}, "spec.kubelet.systemReserved",
     "cannot be a negative resource quantity"),
    ("image GC thresholds inverted", "spec.kubelet",
     {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60},
     "spec.kubelet.imageGCHighThresholdPercent", "must be greater than imageGCLowThresholdPercent"),
    ("soft eviction without grace period", "spec.kubelet", {"evictionSoft": {"memory.available": "5%"}},
     "spec.kubelet.evictionSoftGracePeriod", "has no matching grace period"),
    ("two root volumes", "spec.blockDeviceMappings",
     [{"rootVolume": True, "ebs": {"volumeSize": "20Gi"}}, {"rootVolume": True, "ebs": {"volumeSize": "20Gi"}}],
     "spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume"),
    ("EBS without size or snapshot", "spec.blockDeviceMappings", [{"ebs": {"volumeType": "gp3"}}],
     "spec.blockDeviceMappings[0].ebs", "snapshotID or volumeSize must be defined"),
    ("EBS volume too large", "spec.blockDeviceMappings", [{"ebs": {"volumeSize": "70000Gi"}}],
     "spec.blockDeviceMappings[0].ebs.volumeSize", 'invalid volume size "70000Gi"'),
    ("hop limit over 64", "spec.metadataOptions", {"httpPutResponseHopLimit": 65},
     "spec.metadataOptions.httpPutResponseHopLimit", "must be at most 64"),
    ("no primary network interface", "spec.networkInterfaces",
     [{"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}], "spec.networkInterfaces",
     "must include a primary interface"),
    ("placement group name and id", "spec.placementGroupSelector", {"name": "a", "id": "pg-1"},
     "spec.placementGroupSelector.id", "'name' and 'id' are mutually exclusive"),
    ("empty connection tracking", "spec.connectionTracking", {}, "spec.connectionTracking",
     "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"),
    ("unknown amiFamily", "spec.amiFamily", "Ubuntu", "spec.amiFamily", 'unknown value "Ubuntu"; use one of AL2,'),
]  # fmt: skip

NODECLAIM_CASES: list[tuple[str, str, Any, str, str]] = [
    ("hostname requirement", "spec.requirements.0", requirement("kubernetes.io/hostname", "In", ["a"]),
     "spec.requirements[0].key", 'label "kubernetes.io/hostname" is restricted'),
    ("karpenter.sh domain key", "spec.requirements.0", requirement("karpenter.sh/team"),
     "spec.requirements[0].key", 'label domain "karpenter.sh" is restricted'),
    ("bad request quantity", "spec.resources.requests", {"cpu": "1 core"}, "spec.resources.requests.cpu",
     'invalid quantity "1 core"'),
]  # fmt: skip


def rejected(doc: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ApiValidationError) as raised:
        parse_api_object(doc)
    return [(p.field, p.message) for p in raised.value.problems]


def assert_rejected(doc: dict[str, Any], field: str, words: str) -> None:
    problems = rejected(doc)
    matching = [message for f, message in problems if f == field]
    assert matching, f"no problem reported at {field}; got {problems}"
    assert any(words in message for message in matching), f"{words!r} not in {matching}"


@pytest.mark.parametrize(("path", "value", "field", "words"), [c[1:] for c in NODEPOOL_CASES],
                         ids=[c[0] for c in NODEPOOL_CASES])  # fmt: skip
def test_invalid_nodepool_is_rejected_at_its_field(path: str, value: Any, field: str, words: str) -> None:
    assert_rejected(with_value(nodepool_doc(), path, value), field, words)


@pytest.mark.parametrize(("path", "value", "field", "words"), [c[1:] for c in EC2_CASES],
                         ids=[c[0] for c in EC2_CASES])  # fmt: skip
def test_invalid_ec2nodeclass_is_rejected_at_its_field(path: str, value: Any, field: str, words: str) -> None:
    assert_rejected(with_value(ec2nodeclass_doc(), path, value), field, words)


@pytest.mark.parametrize(("path", "value", "field", "words"), [c[1:] for c in NODECLAIM_CASES],
                         ids=[c[0] for c in NODECLAIM_CASES])  # fmt: skip
def test_invalid_nodeclaim_is_rejected_at_its_field(path: str, value: Any, field: str, words: str) -> None:
    assert_rejected(with_value(nodeclaim_doc(), path, value), field, words)


def test_static_nodepool_may_only_limit_nodes() -> None:
    doc = with_value(nodepool_doc(), "spec.replicas", 3)
    doc = with_value(doc, "spec.weight", DELETE)
    assert_rejected(doc, "spec.limits", "only 'limits.nodes' is supported on static NodePools")


def test_static_nodepool_may_not_set_a_weight() -> None:
    doc = with_value(with_value(nodepool_doc(), "spec.replicas", 3), "spec.limits", {"nodes": 5})
    assert_rejected(doc, "spec.weight", "'weight' is not supported on static NodePools")


def test_every_problem_is_reported_not_just_the_first() -> None:
    doc = with_value(nodepool_doc(), "spec.weight", 0)
    doc = with_value(doc, "spec.disruption.consolidateAfter", "soon")
    fields = [field for field, _ in rejected(doc)]
    assert "spec.weight" in fields and "spec.disruption.consolidateAfter" in fields


# (case, path, value): documents Karpenter accepts, so must we.
VALID_NODEPOOLS: list[tuple[str, str, Any]] = [
    ("node.kubernetes.io label", LABELS, {"node.kubernetes.io/role": "web"}),
    ("node-restriction.kubernetes.io label", LABELS, {"node-restriction.kubernetes.io/team": "a"}),
    ("kops.k8s.io label", LABELS, {"kops.k8s.io/instancegroup": "nodes"}),
    ("well-known label as template label", LABELS, {"karpenter.sh/capacity-type": "spot"}),
    ("unprefixed requirement key", f"{REQ}.0", requirement("team", "In", ["a"])),
    ("NotIn without values", f"{REQ}.0", requirement("team", "NotIn", [])),
    ("Exists with minValues", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-family", minValues=5)),
    ("Gte with zero", f"{REQ}.0", requirement("karpenter.k8s.aws/instance-cpu", "Gte", ["0"])),
    ("capacity reservation label", f"{REQ}.0", requirement("karpenter.k8s.aws/capacity-reservation-id")),
    ("expireAfter Never", "spec.template.spec.expireAfter", "Never"),
    ("compound duration", "spec.disruption.consolidateAfter", "1h30m"),
    ("budget with a cron window", BUDGETS, [{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}]),
    ("budget duration as Go prints it", BUDGETS, [{"nodes": "10%", "schedule": "@daily", "duration": "1h30m0s"}]),
    ("integer limits", "spec.limits", {"cpu": 100, "nvidia.com/gpu": 2}),
    (
        "same taint key with another effect",
        TAINTS,
        [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}],
    ),
    ("a known capacity type among others", f"{REQ}.0", requirement("karpenter.sh/capacity-type", "In", ["spot", "x"])),
    ("deprecated arch key", f"{REQ}.0", requirement("beta.kubernetes.io/arch", "In", ["arm64"])),
    ("deprecated zone key", f"{REQ}.0", requirement("failure-domain.beta.kubernetes.io/zone", "In", ["us-west-2a"])),
]


@pytest.mark.parametrize(("path", "value"), [c[1:] for c in VALID_NODEPOOLS], ids=[c[0] for c in VALID_NODEPOOLS])
def test_nodepool_accepts_what_karpenter_accepts(path: str, value: Any) -> None:
    parse_api_object(with_value(nodepool_doc(), path, value))


def test_nodeclaim_may_require_its_nodepool() -> None:
    claim = parse_api_object(nodeclaim_doc())
    assert claim.kind == "NodeClaim"


def test_ec2nodeclass_may_omit_ami_terms_when_amifamily_is_set() -> None:
    doc = with_value(with_value(ec2nodeclass_doc(), "spec.amiSelectorTerms", DELETE), "spec.amiFamily", "AL2023")
    parse_api_object(doc)


def test_ec2nodeclass_custom_family_may_use_any_alias() -> None:
    parse_api_object(with_value(ec2nodeclass_doc(), "spec.amiFamily", "Custom"))


@pytest.mark.parametrize(
    ("obj", "managed"),
    [
        (
            {"spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"}}}}},
            True,
        ),
        (
            {"spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass"}}}}},
            False,
        ),
        ({"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "a"}}}, True),
        ({"spec": {"nodeClassRef": {"group": "example.com", "kind": "EC2NodeClass", "name": "a"}}}, False),
        ({"spec": {"template": {"spec": {"nodeClassRef": {"name": "a"}}}}}, True),  # invalid: validation reports it
        ({"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "name": "a"}}}, True),
        ({"spec": None}, True),
        ({}, True),
    ],
)
def test_only_pools_and_claims_of_an_ec2nodeclass_are_managed(obj: dict[str, Any], managed: bool) -> None:
    assert is_managed(obj) is managed
