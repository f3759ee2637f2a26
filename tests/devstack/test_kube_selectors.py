"""Label and field selectors on list and watch."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import watch

from devstack.kube.errors import ApiError
from devstack.kube.selectors import label_selector_matcher, parse_field_selector, parse_label_selector
from tests.devstack.conftest import CoreApi, CustomApi, make_node, make_nodeclaim, make_pod, unique


@pytest.fixture
def labelled_nodes(core: CoreApi) -> str:
    """Three nodes tagged with one run id: tier a/b/c, and only 'a' has the 'gpu' label."""
    run = unique("run")
    core.create_node(make_node(f"{run}-a", run=run, tier="a", gpu="yes"))
    core.create_node(make_node(f"{run}-b", run=run, tier="b"))
    core.create_node(make_node(f"{run}-c", run=run, tier="c"))
    return run


def names(items: list[Any]) -> list[str]:
    return [i.metadata.name.rsplit("-", 1)[-1] for i in items]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [("tier=a", ["a"]), ("tier==b", ["b"]), ("tier!=a", ["b", "c"]), ("tier in (a, c)", ["a", "c"]),
     ("tier notin (a,c)", ["b"]), ("gpu", ["a"]), ("!gpu", ["b", "c"]), ("tier!=a,!gpu,tier in (b)", ["b"])],
)  # fmt: skip
def test_label_selectors_on_list(core: CoreApi, labelled_nodes: str, selector: str, expected: list[str]) -> None:
    found = core.list_node(label_selector=f"run={labelled_nodes},{selector}").items
    assert names(found) == expected


def test_field_selectors_on_pods(core: CoreApi) -> None:
    run = unique("run")
    core.create_namespaced_pod("default", make_pod(f"{run}-on", node="n1", run=run))
    core.create_namespaced_pod("default", make_pod(f"{run}-off", run=run))
    on = core.list_namespaced_pod("default", label_selector=f"run={run}", field_selector="spec.nodeName=n1")
    off = core.list_namespaced_pod("default", label_selector=f"run={run}", field_selector="spec.nodeName=")
    pending = core.list_pod_for_all_namespaces(
        label_selector=f"run={run}", field_selector="status.phase!=Running,metadata.namespace=default"
    )
    assert [p.metadata.name for p in on.items] == [f"{run}-on"]
    assert [p.metadata.name for p in off.items] == [f"{run}-off"]
    assert len(pending.items) == 2


def test_field_selector_on_events_involved_object(core: CoreApi) -> None:
    name = unique("ev")
    event = {
        "metadata": {"name": name},
        "involvedObject": {"kind": "Node", "name": "n-x"},
        "reason": "Test",
        "message": "hello",
        "type": "Normal",
    }
    core.create_namespaced_event("default", event)
    found = core.list_namespaced_event("default", field_selector="involvedObject.name=n-x,involvedObject.kind=Node")
    assert [e.metadata.name for e in found.items] == [name]


def test_label_selector_on_watch(core: CoreApi, labelled_nodes: str) -> None:
    stream = watch.Watch().stream(
        core.list_node, label_selector=f"run={labelled_nodes},tier in (b,c)", timeout_seconds=1
    )
    seen = sorted(e["object"].metadata.name.rsplit("-", 1)[-1] for e in stream)
    assert seen == ["b", "c"]


def test_a_bad_selector_is_a_bad_request_naming_the_term() -> None:
    with pytest.raises(ApiError, match="tier in a"):
        parse_label_selector("tier in a,b")
    with pytest.raises(ApiError, match="fieldSelector"):
        parse_field_selector("spec.nodeName")


def test_label_selector_objects_match_labels_and_expressions() -> None:
    pod = {"metadata": {"labels": {"app": "web", "tier": "front"}}}
    assert label_selector_matcher(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}
    )(pod)
    assert not label_selector_matcher({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})(pod)
    assert label_selector_matcher({})(pod) and not label_selector_matcher(None)(pod)


def test_selectors_and_watch_on_custom_resources(custom: CustomApi) -> None:
    run = unique("run")
    for pool in ("a", "b"):
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims",
                                            make_nodeclaim(f"{run}-{pool}", run=run, pool=pool))  # fmt: skip
    listed = custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", label_selector=f"run={run},pool=b")
    assert [c["metadata"]["name"] for c in listed["items"]] == [f"{run}-b"]
    assert listed["kind"] == "NodeClaimList"
    stream = watch.Watch()
    seen = []
    for event in stream.stream(custom.list_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims",
                               label_selector=f"run={run}", timeout_seconds=5):  # fmt: skip
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        if len(seen) == 2:
            stream.stop()
    assert sorted(seen) == [("ADDED", f"{run}-a"), ("ADDED", f"{run}-b")]


def test_delete_collection_deletes_the_selected_objects(core: CoreApi) -> None:
    run = unique("run")
    for tier in ("a", "b", "c"):
        core.create_node(make_node(f"{run}-{tier}", run=run, tier=tier))
    core.delete_collection_node(label_selector=f"run={run},tier!=b")
    assert names(core.list_node(label_selector=f"run={run}").items) == ["b"]
