"""Windows nodes in the solver: a node class with a Windows alias launches amd64 nodes labelled
`kubernetes.io/os: windows` and `node.kubernetes.io/windows-build`, so a pod selecting
`kubernetes.io/os: windows` gets one, and a pod selecting Linux does not."""

from __future__ import annotations

from tests.unit.scheduling.builders import node_class, node_pool, pod, reason, requirement, schedule

OS = "kubernetes.io/os"
ARCH = "kubernetes.io/arch"
BUILD = "node.kubernetes.io/windows-build"


def windows_world() -> dict[str, object]:
    windows = node_class("windows2022")
    windows.spec.ami_selector_terms[0].alias = "windows2022@latest"
    pool = node_pool("windows2022", requirements=[{"key": OS, "operator": "In", "values": ["windows"]}])
    pool.spec.template.spec.node_class_ref.name = "windows2022"
    linux = node_pool("default", requirements=[{"key": OS, "operator": "In", "values": ["linux"]}])
    return {"pools": [pool, linux], "node_classes": [windows, node_class()]}


def test_a_pod_selecting_windows_gets_a_windows_amd64_node_with_its_build_label() -> None:
    world = windows_world()
    plan = schedule([pod("iis", nodeSelector={OS: "windows"})], world["pools"], node_classes=world["node_classes"])  # type: ignore[arg-type]
    [claim] = plan.node_claims
    assert claim.node_pool == "windows2022"
    assert requirement(claim, OS) == ["windows"] and claim.labels[OS] == "windows"
    assert not any(name.startswith(("m6g", "c6g")) for name in claim.instance_types)  # amd64 only


def test_the_windows_build_label_selects_the_windows_server_release() -> None:
    world = windows_world()
    pending = [pod("iis-2022", nodeSelector={BUILD: "10.0.20348"}), pod("iis-2019", nodeSelector={BUILD: "10.0.17763"})]
    plan = schedule(pending, world["pools"], node_classes=world["node_classes"])  # type: ignore[arg-type]
    assert [(c.node_pool, c.pods) for c in plan.node_claims] == [("windows2022", ["default/iis-2022"])]
    assert reason(plan, "default/iis-2019")


def test_linux_and_windows_pods_go_to_their_own_pools() -> None:
    world = windows_world()
    pending = [pod("iis", nodeSelector={OS: "windows"}), pod("web", nodeSelector={OS: "linux"})]
    plan = schedule(pending, world["pools"], node_classes=world["node_classes"])  # type: ignore[arg-type]
    pools = {claim.node_pool: requirement(claim, OS) for claim in plan.node_claims}
    assert pools == {"windows2022": ["windows"], "default": ["linux"]}


def test_an_arm64_windows_pod_fits_nowhere() -> None:
    world = windows_world()
    arm = pod("iis-arm", nodeSelector={OS: "windows", ARCH: "arm64"})
    plan = schedule([arm], world["pools"], node_classes=world["node_classes"])  # type: ignore[arg-type]
    assert plan.node_claims == []
    assert reason(plan, "default/iis-arm")
