"""scheduling.provisioning.volumes.VolumeReadiness: pending pods whose PersistentVolumeClaims the kube-scheduler would
not use yet are named with the reason, as Karpenter's provisioner leaves them out of its batch."""

from __future__ import annotations

from typing import Any

import pytest

from scheduling.provisioning.volumes import BIND_COMPLETED, VOLUMES_NOT_READY, VolumeReadiness

Obj = dict[str, Any]
DEFAULT = {"storageclass.kubernetes.io/is-default-class": "true"}


def storage_class(
    name: str, mode: str | None = "WaitForFirstConsumer", annotations: dict[str, str] | None = None
) -> Obj:
    return {
        "metadata": {"name": name, "annotations": annotations or {}},
        **({"volumeBindingMode": mode} if mode else {}),
    }


def claim(name: str = "data", *, volume: str = "", storage: str | None = "gp3", bound: bool = True, **meta: Any) -> Obj:
    annotations = {BIND_COMPLETED: "yes"} if volume and bound else {}
    spec: Obj = {**({"volumeName": volume} if volume else {}), **({"storageClassName": storage} if storage else {})}
    return {"metadata": {"name": name, "namespace": "default", "annotations": annotations, **meta}, "spec": spec}


def volume(name: str, **meta: Any) -> Obj:
    return {"metadata": {"name": name, **meta}, "spec": {}}


def pod(*claims: str) -> Obj:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return {
        "metadata": {"name": "db-0", "namespace": "default"},
        "spec": {"volumes": [{"name": "tmp", "emptyDir": {}}, *volumes]},
    }


def problem(
    claims: list[Obj], volumes: list[Obj] | None = None, classes: list[Obj] | None = None, *names: str
) -> str | None:
    readiness = VolumeReadiness(claims, volumes or [], [storage_class("gp3")] if classes is None else classes)
    return readiness.problem(pod(*(names or [c["metadata"]["name"] for c in claims])))


def test_usable_claims_leave_the_pod_to_the_solver() -> None:
    assert problem([claim()]) is None  # unbound, WaitForFirstConsumer: the pod picks the zone
    assert problem([claim(volume="pv-1")], [volume("pv-1")]) is None  # bound
    assert problem([claim(storage=None)], classes=[storage_class("gp3", annotations=DEFAULT)]) is None
    assert problem([], [], None, "missing") is None  # the solver reports a missing claim itself
    assert problem([claim(volume="pv-gone")]) is None  # and a missing volume


@pytest.mark.parametrize(
    ("claims", "volumes", "classes", "expected"),
    [
        ([claim(deletionTimestamp="2026-12-02T00:00:00Z")], [], None, "is being deleted"),
        ([{**claim(volume="pv-1"), "status": {"phase": "Lost"}}], [], None, 'is Lost: the PersistentVolume "pv-1"'),
        (
            [claim(volume="pv-1")],
            [volume("pv-1", deletionTimestamp="2026-12-02T00:00:00Z")],
            None,
            "which is being deleted",
        ),
        ([claim(volume="pv-1", bound=False)], [volume("pv-1")], None, f"no {BIND_COMPLETED} annotation"),
        ([claim(storage="io2")], [], None, 'its StorageClass "io2" does not exist'),
        (
            [claim(storage=None)],
            [],
            None,
            "names no StorageClass and the cluster has no default one: set spec.storageClassName",
        ),
        ([claim()], [], [storage_class("gp3", mode="Immediate")], 'its StorageClass "gp3" binds Immediate'),
        ([claim()], [], [storage_class("gp3", mode=None)], "binds Immediate"),  # the API server's default
    ],
)
def test_unusable_claims_are_named_with_the_reason(
    claims: list[Obj], volumes: list[Obj], classes: list[Obj] | None, expected: str
) -> None:
    why = problem(claims, volumes, classes)
    assert why is not None and why.startswith(f'{VOLUMES_NOT_READY}: PersistentVolumeClaim "default/data" ')
    assert expected in why


def test_the_first_unusable_claim_of_several_is_named() -> None:
    why = problem([claim("logs"), claim("data", deletionTimestamp="2026-12-02T00:00:00Z")], [], None, "logs", "data")
    assert why is not None and '"default/data" is being deleted' in why
