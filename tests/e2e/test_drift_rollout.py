"""Drift on the shared stack: a changed AMI of an EC2NodeClass marks its nodes Drifted (AMIDrift), and
the disruption controller alone rolls them onto the new AMI, never disrupting more nodes at once than
the NodePool's budget. Observed through the Kubernetes API and EC2 only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from tests.e2e.conftest import claim_tag, deployment, live_instances
from tests.e2e.disruption_views import (
    PendingWatch,
    all_running,
    claim_prices,
    controller_state,
    pinned,
    pods_of,
    tainted_nodes_of,
)
from tests.eventually import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.long]


def al2023_image(stack: DevStack, release: str) -> str:
    """The id of the seeded x86_64 AL2023 EKS image of a release (the local stack seeds several)."""
    name = f"amazon-eks-node-al2023-x86_64-standard-1.34-{release}"
    (image,) = stack.ec2.describe_images(Filters=[{"Name": "name", "Values": [name]}])["Images"]
    return str(image["ImageId"])


def pinned_ami_pool(cluster: str, image_id: str) -> str:
    """An EC2NodeClass selecting one AMI by id, and a NodePool of 2-vCPU nodes on it that only drift may
    disrupt (consolidation off), one node at a time."""
    return f"""
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: amiroll}}
spec:
  role: "KarpenterNodeRole-{cluster}"
  amiFamily: AL2023
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: "{cluster}"}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: "{cluster}"}}}}]
  amiSelectorTerms: [{{id: {image_id}}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: amiroll}}
spec:
  disruption:
    consolidateAfter: Never
    budgets: [{{nodes: "1"}}]
  template:
    spec:
      taints: [{{key: pool, value: amiroll, effect: NoSchedule}}]
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
        - {{key: kubernetes.io/arch, operator: In, values: ["amd64"]}}
        - {{key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: amiroll}}
"""


def drift_reason(claim: dict[str, Any]) -> str:
    """The reason of the claim's Drifted=True condition, '' when it has none."""
    conditions = (claim.get("status") or {}).get("conditions") or []
    return next((c.get("reason", "") for c in conditions if c["type"] == "Drifted" and c["status"] == "True"), "")


def test_a_changed_node_class_ami_rolls_every_node_within_the_budget_without_manual_commands(stack: DevStack) -> None:
    old, new = al2023_image(stack, "v20240807"), al2023_image(stack, "v20250715")
    stack.apply_text(pinned_ami_pool(stack.config.cluster_name, old))
    # 1.2 vCPU each: one pod per 2-vCPU node, so two nodes, and a drifted node's pod needs a replacement.
    stack.apply_text(deployment("amiroll", 2, cpu="1200m", memory="512Mi", extra_spec=pinned("amiroll")))
    eventually(lambda: all_running(stack, "amiroll"), timeout=90, what="both pods running")
    originals = set(claim_prices(stack, "amiroll"))
    assert len(originals) == 2
    images = {claim_tag(i): i["ImageId"] for i in live_instances(stack)}
    assert {images[c] for c in originals} == {old}

    stack.apply_text(pinned_ami_pool(stack.config.cluster_name, new))
    pending = PendingWatch(stack, "amiroll")
    most_disrupting = [0]

    def rolled() -> bool:
        pending.sample()
        claims = {
            c["metadata"]["name"]: c
            for c in stack.kube.list(r.NODECLAIM)
            if (c["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == "amiroll"
        }
        going = {n for n, c in claims.items() if c["metadata"].get("deletionTimestamp")}
        most_disrupting[0] = max(most_disrupting[0], len(going | set(tainted_nodes_of(stack, claims))))
        images = {claim_tag(i): i["ImageId"] for i in live_instances(stack)}
        return (
            not set(claims) & originals
            and len(claims) == 2
            and all(images.get(n) == new and not drift_reason(c) for n, c in claims.items())
            and all_running(stack, "amiroll")
        )

    def drifted() -> bool:
        rolled()  # keep sampling
        claims = [c for c in stack.kube.list(r.NODECLAIM) if c["metadata"]["name"] in originals]
        return any(drift_reason(c) == "AMIDrift" for c in claims) or not claims

    try:
        eventually(drifted, timeout=60, interval=0.5, what="the original NodeClaims marked Drifted (AMIDrift)")
        eventually(rolled, timeout=150, interval=0.5, what="every node rolled onto the new AMI")
    except AssertionError as err:
        recent = asyncio.run(controller_state(stack)).recent
        images = {claim_tag(i): i["ImageId"] for i in live_instances(stack)}
        claims = {
            c["metadata"]["name"]: (
                drift_reason(c),
                images.get(c["metadata"]["name"]),
                c["metadata"].get("deletionTimestamp"),
            )
            for c in stack.kube.list(r.NODECLAIM)
        }
        pods = {
            p["metadata"]["name"]: (p["spec"].get("nodeName"), p["status"].get("phase"))
            for p in pods_of(stack, "amiroll")
        }
        raise AssertionError(
            f"{err}; originals {sorted(originals)} on {old}, new {new}; claims (drift reason, image, deleting) "
            f"{claims}; pods {pods}; controller: {recent}"
        ) from None
    # Seen disrupting (tainted or deleting) while sampled, never two at once with a budget of one node.
    assert most_disrupting[0] == 1, f"at most {most_disrupting[0]} node(s) seen disrupted at once; budget 1"
    assert pending.longest < 30, f"a pod was pending {pending.longest:.0f}s"
    print(f"rolled {sorted(originals)} from {old} to {new}; longest pending pod {pending.longest:.1f}s")
    stack.kube.delete(r.DEPLOYMENT, "amiroll", "default")
