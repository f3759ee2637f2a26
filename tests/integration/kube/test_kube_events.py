"""EventRecorder against the emulated API server."""

from __future__ import annotations

import uuid

import pytest

from devstack.kube.server import KubeApiServer
from kube.client import KubeClient
from kube.errors import NotFoundError
from kube.events import EventRecorder, event_name
from kube.resources import EVENT, NODECLAIM, POD
from kube.types import Obj


def create_claim(kube: KubeClient) -> Obj:
    return kube.create(NODECLAIM, {"metadata": {"name": f"claim-{uuid.uuid4().hex[:8]}"}, "spec": {}})


def test_an_event_about_a_cluster_scoped_object_goes_to_default(kube: KubeClient) -> None:
    claim = create_claim(kube)
    EventRecorder(kube).record(claim, "Normal", "Launched", "launched i-123")
    event = kube.get(EVENT, event_name(claim, "Launched", "launched i-123"), "default")
    assert event["involvedObject"] == {
        "kind": "NodeClaim",
        "apiVersion": "karpenter.sh/v1",
        "name": claim["metadata"]["name"],
        "uid": claim["metadata"]["uid"],
        "resourceVersion": claim["metadata"]["resourceVersion"],
    }
    assert (event["type"], event["reason"], event["message"], event["count"]) == (
        "Normal", "Launched", "launched i-123", 1,
    )  # fmt: skip
    assert event["source"] == {"component": "nodeflow"}


def test_a_repeated_event_bumps_the_count_of_one_event(kube: KubeClient) -> None:
    claim = create_claim(kube)
    recorder = EventRecorder(kube, component="nodeflow-test")
    for _ in range(3):
        recorder.record(claim, "Warning", "LaunchFailed", "no capacity")
    recorder.record(claim, "Warning", "LaunchFailed", "other message")
    mine = [e for e in kube.list(EVENT, "default") if e["involvedObject"].get("uid") == claim["metadata"]["uid"]]
    assert sorted((e["message"], e["count"]) for e in mine) == [("no capacity", 3), ("other message", 1)]


def test_events_about_namespaced_objects_stay_in_their_namespace(kube: KubeClient) -> None:
    pod = kube.create(POD, {"metadata": {"name": f"p-{uuid.uuid4().hex[:8]}", "namespace": "kube-system"},
                            "spec": {"containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
    EventRecorder(kube).record(pod, "Normal", "Nominated", "nominated for a new node")
    assert kube.get(EVENT, event_name(pod, "Nominated", "nominated for a new node"), "kube-system")


def test_recording_never_raises(kube: KubeClient, api_server: KubeApiServer) -> None:
    claim = create_claim(kube)

    def fail_event_writes() -> None:
        creates = api_server.emulator["post /api/v1/namespaces/default/events"]
        seen = len(creates)  # reactions slice the request log: fail the next create
        creates[seen : seen + 1] << 503

    api_server.call(fail_event_writes)
    EventRecorder(kube).record(claim, "Normal", "Launched", "x")  # the 503 is logged
    EventRecorder(kube).record(claim, "Sideways", "Launched", "y")  # a bad type is logged
    with pytest.raises(NotFoundError):
        kube.get(EVENT, event_name(claim, "Launched", "x"), "default")
    with pytest.raises(NotFoundError):
        kube.get(EVENT, event_name(claim, "Launched", "y"), "default")


def test_event_names_are_stable_and_bounded() -> None:
    claim = {"kind": "NodeClaim", "metadata": {"name": "n" * 300, "uid": "u"}}
    name = event_name(claim, "Reason", "message")
    assert name == event_name(claim, "Reason", "message")
    assert name != event_name(claim, "Reason", "other")
    assert len(name) <= 253
