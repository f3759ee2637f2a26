"""Pending pods become running nodes, on real Temporal, the EC2 API (moto) and the Kubernetes API."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from typing import Any

import pytest

from devstack.stack import DevStack
from kube import resources as r
from kube.errors import NotFoundError
from tests.dashboard import dashboard_metrics
from tests.e2e.conftest import (
    assert_one_instance_per_claim,
    claim_of_node,
    deployment,
    live_instances,
    pods_of,
    scrape,
)
from tests.eventually import eventually

pytestmark = pytest.mark.e2e


def test_should_bind_a_deployments_pods_to_new_nodes(stack: DevStack) -> None:
    stack.apply_text(deployment("web", 5))
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    pods = pods_of(stack, "web")
    assert len(pods) == 5 and all(p["spec"].get("nodeName") for p in pods)
    for claim in summary["nodeClaims"]:
        assert claim["conditions"]["Launched"] == claim["conditions"]["Registered"] == "True"
        assert claim["conditions"]["Initialized"] == "True"
        node = stack.kube.get(r.NODE, claim["nodeName"])
        assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
        assert "karpenter.sh/termination" in node["metadata"]["finalizers"]
        assert not any(t["key"] == "karpenter.sh/unregistered" for t in node["spec"].get("taints") or [])
    assert_one_instance_per_claim(stack)

    def pool_counted() -> dict[str, Any] | None:  # the NODES column of `kubectl get nodepools`
        claims = stack.kube.list(r.NODECLAIM, label_selector="karpenter.sh/nodepool=default")
        status = stack.kube.get(r.NODEPOOL, "default").get("status") or {}
        counted = claims and status.get("nodes") == len(claims) and (status.get("resources") or {}).get("cpu") != "0"
        return status if counted else None

    # The disruption controller recounts every round (10 s) from its snapshot: a Node seen before its
    # kubelet reported capacity is counted with none until the next round.
    status = eventually(pool_counted, timeout=30, what="NodePool default status.nodes and resources")
    assert status["resources"]["nodes"] == str(status["nodes"])
    health = next(c for c in status["conditions"] if c["type"] == "NodeRegistrationHealthy")
    assert health["status"] == "True"


def test_should_list_nodeclaim_workflows_in_the_temporal_ui(stack: DevStack) -> None:
    assert stack.ui_url
    with urllib.request.urlopen(stack.ui_url, timeout=10) as page:
        assert page.status == 200
        assert "text/html" in page.headers["Content-Type"]
    query = urllib.parse.quote('WorkflowType="NodeClaim"')
    url = f"{stack.ui_url.rstrip('/')}/api/v1/namespaces/default/workflows?query={query}"

    def listed() -> list[str]:
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
        return [e["execution"]["workflowId"] for e in body.get("executions", [])]

    # A node of its own: on the shared stack no other test is known to have run before this one.
    stack.apply_text(deployment("ui-listed", 1, cpu="250m", memory="256Mi"))

    def claim_of_pod() -> str | None:
        node = next((p["spec"].get("nodeName") for p in pods_of(stack, "ui-listed")), None)
        claims = [c for c in stack.kube.list(r.NODECLAIM) if node and (c.get("status") or {}).get("nodeName") == node]
        return claims[0]["metadata"]["name"] if claims else None

    claim = eventually(claim_of_pod, timeout=90, what="the pod bound to a NodeClaim's node")
    eventually(lambda: f"nodeclaim-{claim}" in listed(), timeout=30, what=f"nodeclaim-{claim} in the UI's list")
    stack.kube.delete(r.DEPLOYMENT, "ui-listed", "default")


def test_should_drain_terminate_and_replace_a_nodeclaim_deleted_with_kubectl(stack: DevStack) -> None:
    stack.apply_text(deployment("victim", 2, cpu="500m", memory="512Mi"))
    assert stack.wait_settled(timeout=120)["settled"]

    def bound_to_a_claim() -> tuple[str, dict[str, Any]] | None:
        """A victim pod's node and its NodeClaim. The shared stack consolidates: a pod may have just been
        moved, and its old node's claim be going, since the stack settled."""
        claims = [c for c in stack.kube.list(r.NODECLAIM) if not c["metadata"].get("deletionTimestamp")]
        for pod in pods_of(stack, "victim"):
            node_name = pod["spec"].get("nodeName")
            claim = next((c for c in claims if node_name and c.get("status", {}).get("nodeName") == node_name), None)
            if claim is not None:
                return node_name, claim
        return None

    node_name, claim = eventually(bound_to_a_claim, timeout=60, what="a victim pod on a NodeClaim's node")
    name, instance_id = claim["metadata"]["name"], claim["status"]["providerID"].rsplit("/", 1)[-1]

    kubectl = ["kubectl", "--kubeconfig", str(stack.kubeconfig)]
    subprocess.run([*kubectl, "delete", "nodeclaim", name, "--wait=false"], check=True, capture_output=True)

    def gone() -> bool:
        try:
            stack.kube.get(r.NODECLAIM, name)
            return False
        except NotFoundError:
            pass
        try:
            stack.kube.get(r.NODE, node_name)
            return False
        except NotFoundError:
            return True

    eventually(gone, timeout=90, what=f"NodeClaim {name} and Node {node_name} to be gone")
    state = stack.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] in ("shutting-down", "terminated")
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    assert all(p["spec"].get("nodeName") not in (None, node_name) for p in pods_of(stack, "victim"))
    assert_one_instance_per_claim(stack)


INVALID_POOLS = {
    "bad-operator": ('[{key: kubernetes.io/arch, operator: Equals, values: ["amd64"]}]', "720h", "operator"),
    # a restricted domain the models refuse and the CRD's rules do not (Karpenter checks it at runtime)
    "bad-label": ('[{key: kubernetes.io/custom, operator: In, values: ["x"]}]', "720h", "kubernetes.io/custom"),
    "bad-duration": ("[]", "thirty days", "expireAfter"),
}


def nodepool(name: str, requirements: str, expire_after: str, selector_label: str = "") -> str:
    labels = f"\n      labels: {{pool: {selector_label}}}" if selector_label else ""
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    metadata:{labels or " {}"}
    spec:
      requirements: {requirements}
      expireAfter: "{expire_after}"
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
"""


def test_should_reject_invalid_nodepools_naming_the_field_and_keep_provisioning(stack: DevStack) -> None:
    for name, (requirements, expire_after, _) in INVALID_POOLS.items():
        stack.apply_text(nodepool(name, requirements, expire_after))

    def ready_condition(name: str) -> dict[str, Any] | None:
        conditions = stack.kube.get(r.NODEPOOL, name).get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Ready" and c["status"] == "False"), None)

    # what the CRD's CEL rules refuse never reaches the worker, as on a real cluster
    refused = stack.apply_text(nodepool("hostname", "[{key: kubernetes.io/hostname, operator: Exists}]", "720h"))
    assert any(
        "refused by the API server" in p and 'label "kubernetes.io/hostname" is restricted' in p for p in refused
    )
    assert "hostname" not in [p["metadata"]["name"] for p in stack.kube.list(r.NODEPOOL)]
    stack.apply_text(nodepool("good", "[]", "720h", selector_label="good"))
    stack.apply_text(deployment("on-good-pool", 1, extra_spec="      nodeSelector: {pool: good}"))
    for name, (_, _, field) in INVALID_POOLS.items():
        condition = eventually(lambda name=name: ready_condition(name), timeout=60, what=f"{name} rejected")
        assert condition["reason"] == "ValidationFailed"
        assert field in condition["message"], condition["message"]
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    pod = pods_of(stack, "on-good-pool")[0]
    node = stack.kube.get(r.NODE, pod["spec"]["nodeName"])
    assert node["metadata"]["labels"]["karpenter.sh/nodepool"] == "good"
    assert len(live_instances(stack)) == len(stack.kube.list(r.NODECLAIM))


def test_should_export_karpenters_metrics_and_the_temporal_sdks_after_a_scale_up(stack: DevStack) -> None:
    stack.apply_text(nodepool("metered", "[]", "720h", selector_label="metered"))
    stack.apply_text(deployment("metered", 3, cpu="1500m", extra_spec="      nodeSelector: {pool: metered}"))
    assert stack.wait_settled(timeout=120)["settled"]
    claims = stack.kube.list(r.NODECLAIM, label_selector="karpenter.sh/nodepool=metered")
    nodes = {claim["status"]["nodeName"] for claim in claims}
    assert claims and len(nodes) == len(claims)
    ready = {c["type"]: c["status"] for claim in claims for c in claim["status"]["conditions"] if c["type"] == "Ready"}
    assert ready == {"Ready": "True"}  # Ready over Launched, Registered and Initialized, as Karpenter's

    def exported() -> bool:
        samples = scrape(stack.worker_metrics_url() + "?name[]=karpenter_nodes_allocatable")
        allocatable = {
            labels["node_name"]
            for labels, _ in samples.get("karpenter_nodes_allocatable", [])
            if labels["nodepool"] == "metered" and labels["resource_type"] == "cpu"
        }
        return allocatable == nodes  # the leader refreshes the gauges every 10 s

    eventually(exported, timeout=30, what="karpenter_nodes_allocatable of the metered pool's nodes")
    samples = scrape(stack.worker_metrics_url())  # everything, once
    created = [v for labels, v in samples["karpenter_nodeclaims_created_total"] if labels["nodepool"] == "metered"]
    assert created == [len(claims)]
    [(labels, _)] = [s for s in samples["karpenter_nodeclaims_created_total"] if s[0]["nodepool"] == "metered"]
    assert (labels["reason"], labels["min_values_relaxed"]) == ("provisioned", "false")
    [rounds] = [v for labels, v in samples["karpenter_scheduler_scheduling_duration_seconds_count"]
                if labels == {"controller": "provisioner"}]  # fmt: skip
    assert rounds >= 1
    timed = {labels["condition"]: v for labels, v in samples["nodeflow_nodeclaims_startup_duration_seconds_count"]
             if labels["nodepool"] == "metered"}  # fmt: skip
    assert timed == dict.fromkeys(("Launched", "Registered", "Initialized"), len(claims))
    metered_nodes = [labels for labels, _ in samples["karpenter_nodes_allocatable"] if labels["nodepool"] == "metered"]
    assert all(labels["instance_type"] and labels["zone"] and labels["capacity_type"] for labels in metered_nodes)
    assert samples["karpenter_cloudprovider_instance_type_offering_price_estimate"]
    launches = sum(v for labels, v in samples["karpenter_cloudprovider_duration_seconds_count"]
                   if labels["method"] == "Create" and labels["controller"] == "launch")  # fmt: skip
    assert launches >= len(claims)
    batched = [v for labels, v in samples["karpenter_cloudprovider_batcher_batch_size_sum"]
               if labels == {"batcher": "create_fleet"}]  # fmt: skip
    assert batched and batched[0] >= len(claims)  # every launch goes out in a CreateFleet batch, alone or not
    usage = {labels["resource_type"] for labels, _ in samples.get("karpenter_nodepools_usage", [])
              if labels["nodepool"] == "metered"}  # fmt: skip
    assert {"cpu", "memory", "nodes"} <= usage
    assert samples["karpenter_cluster_state_synced"] == [({}, 1.0)]
    [(build, one)] = samples["karpenter_build_info"]
    assert one == 1.0 and build["version"] and build["goversion"].startswith("python")

    def requested() -> dict[str, float] | None:
        requests = "karpenter_nodes_total_pod_requests"
        gauge = scrape(f"{stack.worker_metrics_url()}?name[]={requests}").get(requests, [])
        cpu = {labels["node_name"]: v for labels, v in gauge
               if labels["nodepool"] == "metered" and labels["resource_type"] == "cpu"}  # fmt: skip
        return cpu if set(cpu) == nodes and all(v >= 1.5 for v in cpu.values()) else None

    eventually(requested, timeout=30, what="each metered node's cpu requests: at least its 1500m pod")

    sdk = scrape(stack.worker_temporal_metrics_url())
    for histogram in ("temporal_workflow_task_schedule_to_start_latency", "temporal_activity_execution_latency"):
        assert sum(v for _, v in sdk[f"{histogram}_count"]) > 0, histogram  # durations in seconds, no suffix
    assert "temporal_sticky_cache_hit_total" in sdk and "temporal_num_pollers" in sdk
    assert dashboard_metrics("temporal_") <= set(sdk)  # the Grafana dashboard's SDK panels have their series
    stack.kube.delete(r.DEPLOYMENT, "metered", "default")  # its nodes empty and are consolidated away


BROKEN_NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: nowhere}
spec:
  role: KarpenterNodeRole-${CLUSTER_NAME}
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: no-such-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}}]
  amiSelectorTerms: [{alias: al2023@latest}]
"""


def test_should_report_ec2nodeclass_status_and_name_what_matches_nothing(stack: DevStack) -> None:
    def condition(name: str, status: str) -> dict[str, Any] | None:
        conditions = stack.kube.get(r.EC2NODECLASS, name).get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Ready" and c["status"] == status), None)

    stack.apply_text(BROKEN_NODECLASS)
    stack.apply_text(nodepool("stranded", "[]", "720h").replace("name: default}", "name: nowhere}"))
    # A pod only the stranded pool could take: it stays pending and makes a provisioning round happen.
    stack.apply_text(deployment("kick", 1, cpu="100m", memory="64Mi",
                                extra_spec="      nodeSelector: {karpenter.sh/nodepool: stranded}"))  # fmt: skip
    broken = eventually(lambda: condition("nowhere", "False"), timeout=60, what="EC2NodeClass nowhere not Ready")
    # The same round (on the shared stack it may be the first) resolved and reported the default class.
    eventually(lambda: condition("default", "True"), timeout=60, what="EC2NodeClass default Ready")
    status = stack.kube.get(r.EC2NODECLASS, "default")["status"]
    assert {s["zone"] for s in status["subnets"]} == {"us-west-2a", "us-west-2b", "us-west-2c"}
    assert status["securityGroups"] and status["amis"] and status["instanceProfile"]
    assert "subnetSelectorTerms" in broken["message"], broken["message"]
    pool = eventually(
        lambda: next(
            (c for c in stack.kube.get(r.NODEPOOL, "stranded").get("status", {}).get("conditions") or []
             if c["type"] == "Ready" and c["status"] == "False"), None),
        timeout=60, what="NodePool stranded not Ready",
    )  # fmt: skip
    assert "nowhere" in pool["message"]
    stack.kube.delete(r.DEPLOYMENT, "kick", "default")
    assert stack.wait_settled(timeout=120)["settled"]


RESERVED_NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: reserved}
spec:
  role: KarpenterNodeRole-${CLUSTER_NAME}
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}}]
  amiSelectorTerms: [{alias: al2023@latest}]
  capacityReservationSelectorTerms: [{tags: {team: e2e-reserved}}]
"""


def test_should_launch_into_a_capacity_reservation_the_nodepool_allows(stack: DevStack) -> None:
    reservation = stack.ec2.create_capacity_reservation(
        InstanceType="m5.large",
        InstancePlatform="Linux/UNIX",
        AvailabilityZone="us-west-2b",
        InstanceCount=1,
        InstanceMatchCriteria="targeted",
        TagSpecifications=[
            {"ResourceType": "capacity-reservation", "Tags": [{"Key": "team", "Value": "e2e-reserved"}]}
        ],
    )["CapacityReservation"]["CapacityReservationId"]
    stack.apply_text(RESERVED_NODECLASS)
    reserved_or_on_demand = "[{key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}]"
    pool = nodepool("reserved", reserved_or_on_demand, "720h", selector_label="reserved")
    stack.apply_text(pool.replace("name: default}", "name: reserved}"))
    stack.apply_text(deployment("on-reservation", 1, cpu="500m", memory="512Mi",
                                extra_spec="      nodeSelector: {pool: reserved}"))  # fmt: skip
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    node = stack.kube.get(r.NODE, pods_of(stack, "on-reservation")[0]["spec"]["nodeName"])
    node_labels = node["metadata"]["labels"]
    assert node_labels["karpenter.sh/capacity-type"] == "reserved"
    assert node_labels["karpenter.k8s.aws/capacity-reservation-id"] == reservation
    assert node_labels["karpenter.k8s.aws/capacity-reservation-type"] == "default"
    assert (node_labels["node.kubernetes.io/instance-type"], node_labels["topology.kubernetes.io/zone"]) == (
        "m5.large", "us-west-2b"
    )  # fmt: skip
    instance_id = node["spec"]["providerID"].rsplit("/", 1)[-1]
    instance = stack.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    assert instance["CapacityReservationId"] == reservation
    found = stack.ec2.describe_capacity_reservations(CapacityReservationIds=[reservation])["CapacityReservations"]
    assert found[0]["AvailableInstanceCount"] == 0
    status = stack.kube.get(r.EC2NODECLASS, "reserved")["status"]
    assert [c["id"] for c in status["capacityReservations"]] == [reservation]
    stack.kube.delete(r.DEPLOYMENT, "on-reservation", "default")
    stack.kube.delete(r.NODEPOOL, "reserved")  # later tests' pods must not land in the pool or the reservation
    eventually(
        lambda: not stack.kube.list(r.NODECLAIM, label_selector="karpenter.sh/nodepool=reserved"),
        timeout=60, what="the reserved pool's NodeClaims gone",
    )  # fmt: skip


def test_should_drain_and_terminate_a_node_deleted_with_kubectl(stack: DevStack) -> None:
    stack.apply_text(deployment("on-doomed-node", 1, cpu="250m", memory="128Mi"))
    assert stack.wait_settled(timeout=120)["settled"]
    node_name = pods_of(stack, "on-doomed-node")[0]["spec"]["nodeName"]
    claim = next(c for c in stack.kube.list(r.NODECLAIM) if c["status"].get("nodeName") == node_name)
    instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]

    kubectl = ["kubectl", "--kubeconfig", str(stack.kubeconfig)]
    subprocess.run([*kubectl, "delete", "node", node_name, "--wait=false"], check=True, capture_output=True)

    def node_and_claim_gone() -> bool:
        names = {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)}
        nodes = {n["metadata"]["name"] for n in stack.kube.list(r.NODE)}
        return claim["metadata"]["name"] not in names and node_name not in nodes

    eventually(node_and_claim_gone, timeout=90, what=f"Node {node_name} and its NodeClaim to be gone")
    state = stack.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] in ("shutting-down", "terminated")
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    assert_one_instance_per_claim(stack)


def test_should_remove_the_nodeclaim_and_node_of_an_instance_terminated_by_hand(stack: DevStack) -> None:
    """Terminated outside nodeflow (the EC2 console, an `aws ec2 terminate-instances`): the NodeClaim and
    its Node are gone within one garbage-collection interval (2 minutes by default), and the pod runs
    again on a new node."""
    stack.apply_text(deployment("on-hand-terminated", 1, cpu="250m", memory="128Mi"))
    assert stack.wait_settled(timeout=120)["settled"]
    node_name = pods_of(stack, "on-hand-terminated")[0]["spec"]["nodeName"]
    claim = claim_of_node(stack, node_name)
    assert claim is not None
    stack.ec2.terminate_instances(InstanceIds=[claim["status"]["providerID"].rsplit("/", 1)[-1]])

    def node_and_claim_gone() -> bool:
        names = {c["metadata"]["name"] for c in stack.kube.list(r.NODECLAIM)}
        nodes = {n["metadata"]["name"] for n in stack.kube.list(r.NODE)}
        return claim["metadata"]["name"] not in names and node_name not in nodes

    eventually(node_and_claim_gone, timeout=120, what=f"Node {node_name} and its NodeClaim to be gone")
    summary = stack.wait_settled(timeout=120)
    assert summary["settled"], summary
    assert pods_of(stack, "on-hand-terminated")[0]["spec"]["nodeName"] != node_name
    assert_one_instance_per_claim(stack)


def watched_pool(team: str) -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: watched}}
spec:
  template:
    metadata: {{labels: {{pool: watched, team: {team}}}}}
    spec:
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
"""


def test_should_mark_drift_within_seconds_of_a_nodepool_change(stack: DevStack) -> None:
    """The worker's periodic drift check runs every 5 minutes here; a NodePool change triggers one at once."""
    stack.apply_text(watched_pool("a"))
    stack.apply_text(
        deployment("watched", 1, cpu="250m", memory="256Mi", extra_spec="      nodeSelector: {pool: watched}")
    )
    assert stack.wait_settled(timeout=90)["settled"]
    node_name = pods_of(stack, "watched")[0]["spec"]["nodeName"]
    claim = next(c for c in stack.kube.list(r.NODECLAIM) if c.get("status", {}).get("nodeName") == node_name)
    name = claim["metadata"]["name"]

    stack.apply_text(watched_pool("b"))

    def drifted() -> dict[str, Any] | None:
        conditions = stack.kube.get(r.NODECLAIM, name).get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Drifted" and c["status"] == "True"), None)

    marked = eventually(drifted, timeout=60, what=f"NodeClaim {name} marked Drifted after its NodePool changed")
    assert marked["reason"] == "NodePoolDrifted"
