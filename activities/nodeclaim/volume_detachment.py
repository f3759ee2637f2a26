"""Which VolumeAttachments a drained node waits for before its instance is terminated, as Karpenter's
termination waits for them: each of a persistent volume (`spec.source.persistentVolumeName`) on the node,
except one a pod that stays on the node mounts (a pod the drain does not evict, such as a static pod or one
tolerating the disrupted taint: its volume is not going to detach). Terminating the instance first would
leave those volumes attached until EC2 detaches them, and the pods that moved would wait for them.

`awaited_attachments` decides on what was read (pure); `read_awaited` reads the VolumeAttachments and the
PersistentVolumeClaims the node's pods mount, then decides.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kube import resources as r
from kube.errors import ForbiddenError
from kube.types import Kube
from scheduling.drain import drainable, is_terminal
from scheduling.provisioning.provisionable import pod_key

log = logging.getLogger(__name__)

ClaimKey = tuple[str, str]  # a PersistentVolumeClaim's (namespace, name)


def claim_keys(pod: dict[str, Any]) -> list[ClaimKey]:
    """The PersistentVolumeClaims the pod mounts, as (its namespace, claim name)."""
    namespace = str(pod["metadata"].get("namespace", ""))
    return [
        (namespace, str(source["claimName"]))
        for volume in (pod.get("spec") or {}).get("volumes") or []
        if (source := volume.get("persistentVolumeClaim") or {}).get("claimName")
    ]


def awaited_attachments(
    node_name: str,
    attachments: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    claims: Mapping[ClaimKey, dict[str, Any]],
    now: datetime,
) -> list[str]:
    """The names of the VolumeAttachments on `node_name` the drained node waits for (see the module
    docstring). `pods` are the node's pods, `claims` their PersistentVolumeClaims by (namespace, name);
    `now` is timezone-aware."""
    drained = {pod_key(p) for p in drainable(pods, now)}
    staying = [p for p in pods if pod_key(p) not in drained and not is_terminal(p)]
    staying_volumes = {
        str(volume)
        for pod in staying
        for key in claim_keys(pod)
        if (volume := ((claims.get(key) or {}).get("spec") or {}).get("volumeName"))
    }
    return sorted(
        str(a["metadata"]["name"])
        for a in attachments
        if (a.get("spec") or {}).get("nodeName") == node_name
        and (pv := ((a.get("spec") or {}).get("source") or {}).get("persistentVolumeName"))
        and pv not in staying_volumes
    )


def read_awaited(kube: Kube, node_name: str, pods: list[dict[str, Any]], now: datetime) -> list[str]:
    """`awaited_attachments` on the VolumeAttachments and PersistentVolumeClaims read now. A ClusterRole
    from before this wait (not allowed to list volumeattachments) waits for none, and says so in the log,
    so the node still terminates."""
    try:
        attachments = kube.list(r.VOLUMEATTACHMENT)
    except ForbiddenError as err:
        log.warning("not waiting for volumes to detach from node %s: %s (allow list volumeattachments)",
                    node_name, err)  # fmt: skip
        attachments = []
    wanted = {key for pod in pods for key in claim_keys(pod)}
    claims = {
        (namespace, str(claim["metadata"]["name"])): claim
        for namespace in sorted({namespace for namespace, _ in wanted})
        for claim in kube.list(r.PVC, namespace)
        if (namespace, str(claim["metadata"]["name"])) in wanted
    }
    return awaited_attachments(node_name, attachments, pods, claims, now)
