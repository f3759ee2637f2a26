"""EC2NodeClass status as Karpenter writes it: what the selector terms resolve to, the readiness of each
part, and Ready. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis import labels
from apis.ec2nodeclass import PART_CONDITIONS, VALIDATION_SUCCEEDED, EC2NodeClassStatus
from apis.meta import Condition, set_condition
from cloudprovider.errors import PartReadiness
from cloudprovider.types import CapacityReservation, ResolvedNodeClass

ARCH = {"x86_64": "amd64", "arm64": "arm64"}


def ami_status(ami: dict[str, str]) -> dict[str, Any]:
    """`{id, name, requirements}`: the AMI's architecture, and whether it is for GPU instances; plus
    `deprecated: true` when the AMI is deprecated (Karpenter's status.amis[].deprecated, omitted when false)."""
    requirements: list[dict[str, Any]] = [
        {"key": labels.ARCH, "operator": "In", "values": [ARCH.get(ami.get("arch", ""), ami.get("arch", ""))]}
    ]
    gpu = "Exists" if ami.get("variant") == "nvidia" else "DoesNotExist"
    requirements.append({"key": labels.INSTANCE_GPU_COUNT, "operator": gpu})
    status: dict[str, Any] = {"id": ami["id"], "name": ami.get("name", ""), "requirements": requirements}
    if ami.get("deprecated") == "true":
        status["deprecated"] = True
    return status


def reservation_status(reservation: CapacityReservation) -> dict[str, Any]:
    """One entry of status.capacityReservations, with Karpenter's field names (endTime only when the
    reservation ends)."""
    status: dict[str, Any] = {
        "id": reservation.id,
        "instanceType": reservation.instance_type,
        "availabilityZone": reservation.zone,
        "ownerID": reservation.owner_id,
        "instanceMatchCriteria": reservation.instance_match_criteria,
        "reservationType": reservation.reservation_type,
        "state": reservation.state,
    }
    if reservation.end_time:
        status["endTime"] = reservation.end_time
    return status


def desired_status(
    current: dict[str, Any],
    resolved: ResolvedNodeClass | None,
    problem: str,
    now: str,
    reason: str = "NodeClassNotReady",
    generation: int | None = None,
    parts: Mapping[str, PartReadiness] | None = None,
) -> dict[str, Any]:
    """The status to write: resolution results (kept as they were when resolution failed) and a Ready
    condition, True or False with `reason` and the problem naming the field and the fix, that observed
    `generation` (the EC2NodeClass's metadata.generation): readers trust the resolution only when it
    is the current one (EC2NodeClass.status_resolves_spec). Capacity reservations are listed as
    resolved; selecting none leaves the node class Ready, as in Karpenter. Karpenter's conditions of the
    parts Ready depends on (SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady) are all
    True once it resolved, else each as `parts` says it (a part not looked at is left as it was);
    ValidationSucceeded as `parts` says it, True when it resolved and was not judged."""
    merged = dict(current or {})
    if resolved is not None:
        merged.update(
            subnets=[
                {"id": s["id"], "zone": s["zone"], **({"zoneID": s["zoneID"]} if s.get("zoneID") else {})}
                for s in resolved.subnets
            ],
            securityGroups=[
                {"id": g["id"], **({"name": g["name"]} if g.get("name") else {})} for g in resolved.security_groups
            ],
            amis=[ami_status(a) for a in resolved.amis],
            capacityReservations=[reservation_status(c) for c in resolved.capacity_reservations],
            instanceProfile=resolved.instance_profile or None,
        )
    status = EC2NodeClassStatus.model_validate(merged)
    ready, why = ("False", reason) if problem else ("True", "Ready")
    conditions: list[Condition] = status.conditions
    wanted = dict(parts or {})
    if resolved is not None:  # every part resolved; validation as it was judged (True when it was not run)
        wanted = {part: ("True", part, "") for part in PART_CONDITIONS}
        wanted[VALIDATION_SUCCEEDED] = (parts or {}).get(VALIDATION_SUCCEEDED, ("True", VALIDATION_SUCCEEDED, ""))
    for part, (state, part_reason, message) in sorted(wanted.items()):
        conditions = set_condition(
            conditions,
            part,
            state,  # type: ignore[arg-type]
            part_reason,
            message,
            now,
            observed_generation=generation,
        )
    conditions = set_condition(
        conditions,
        "Ready",
        ready,  # type: ignore[arg-type]
        why,
        problem,
        now,
        observed_generation=generation,
    )
    return status.model_copy(update={"conditions": conditions}).to_kube()
