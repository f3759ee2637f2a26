"""activities.nodeclaim.volume_detachment: which VolumeAttachments a drained node waits for."""

from __future__ import annotations

from typing import Any

from activities.nodeclaim.volume_detachment import awaited_attachments
from tests.unit.activities.test_drain import NOW, pod


def test_a_drained_node_waits_only_for_the_volumes_of_pods_that_left() -> None:
    def mounting(name: str, claim: str, **traits: Any) -> dict[str, Any]:
        mounted = pod(name, **traits)
        mounted["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        return mounted

    def bound(claim: str, volume: str) -> tuple[tuple[str, str], dict[str, Any]]:
        return ("default", claim), {"metadata": {"name": claim}, "spec": {"volumeName": volume}}

    def on(node: str, name: str, volume: str | None) -> dict[str, Any]:
        source = {"persistentVolumeName": volume} if volume else {"inlineVolumeSpec": {}}
        return {"metadata": {"name": name}, "spec": {"nodeName": node, "source": source}}

    staying = mounting("agent", "agent-data", tolerates_all=True)  # the drain leaves it: its volume stays too
    claims = dict([bound("agent-data", "pv-agent"), bound("db-data", "pv-db")])
    attachments = [on("n1", "va-db", "pv-db"), on("n1", "va-agent", "pv-agent"), on("n2", "va-elsewhere", "pv-x"),
                   on("n1", "va-inline", None)]  # fmt: skip
    assert awaited_attachments("n1", attachments, [staying], claims, NOW) == ["va-db"]
