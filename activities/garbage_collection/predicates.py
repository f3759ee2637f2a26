"""What is garbage, judged on one reading of the live instances, NodeClaims and Nodes (and the
EC2NodeClasses, for launch templates): the predicates of activities.garbage_collection.collector's rounds and of the
leader's survey, whose module docstring says what each kind of garbage is and why. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError

from apis.ec2nodeclass import EC2NodeClass
from apis.meta import parse_rfc3339
from apis.nodeclaim import LAUNCHED, REGISTERED
from cloudprovider.types import TAG_NODEPOOL, Instance, instance_id_of
from kube.types import Obj


def _condition(claim: Obj, type_: str) -> dict[str, str]:
    conditions = (claim.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == type_), {})


def _node_ready(node: Obj | None) -> bool:
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict))


def _registered_long_ago(claim: Obj, now: datetime, min_age: timedelta) -> bool:
    """Whether `claim` is registered (Registered True) and launched at least `min_age` before `now` (by its
    Launched condition, else its creation time; unknown: never)."""
    if _condition(claim, REGISTERED).get("status") != "True":
        return False
    launched = parse_rfc3339(
        _condition(claim, LAUNCHED).get("lastTransitionTime") or claim["metadata"].get("creationTimestamp")
    )
    return launched is not None and now - launched >= min_age


def is_stranded(
    claim: Obj, live_instance_ids: set[str], nodes: dict[str, Obj], now: datetime, min_age: timedelta
) -> bool:
    """Whether `claim` lost its instance: registered, not being deleted, its provider ID's instance not
    among `live_instance_ids`, its Node (by `status.nodeName`) not Ready or absent, and launched at least
    `min_age` before `now` (`_registered_long_ago`)."""
    status = claim.get("status") or {}
    provider_id = str(status.get("providerID") or "")
    if not provider_id or claim["metadata"].get("deletionTimestamp"):
        return False
    if instance_id_of(provider_id) in live_instance_ids:
        return False
    if _node_ready(nodes.get(str(status.get("nodeName") or ""))):
        return False
    return _registered_long_ago(claim, now, min_age)


def lost_node(claim: Obj, nodes: dict[str, Obj], now: datetime, min_age: timedelta) -> str:
    """The name of `claim`'s Node when that Node vanished: the claim is registered (Registered True and
    `status.nodeName` set), not being deleted, launched at least `min_age` before `now`, and no Node has
    the name; '' otherwise."""
    node_name = str((claim.get("status") or {}).get("nodeName") or "")
    if not node_name or node_name in nodes or claim["metadata"].get("deletionTimestamp"):
        return ""
    return node_name if _registered_long_ago(claim, now, min_age) else ""


def node_class_hashes(node_classes: list[Obj]) -> dict[str, str | None]:
    """Each EC2NodeClass's static hash by name; None for one whose spec does not parse (its launch
    templates are kept: which of them are current cannot be told)."""
    hashes: dict[str, str | None] = {}
    for obj in node_classes:
        try:
            hashes[str(obj["metadata"]["name"])] = EC2NodeClass.model_validate(obj).static_hash()
        except ValidationError:
            hashes[str(obj["metadata"]["name"])] = None
    return hashes


def is_orphaned(instance: Instance, claims: set[str], recorded: set[str]) -> bool:
    """Whether a live instance belongs to no NodeClaim: tagged with one not in `claims` (the names that
    exist), or launched by nodeflow (a `karpenter.sh/nodepool` tag) without a claim tag and not
    `recorded` (the instance ids NodeClaims name as theirs). Untagged instances nodeflow did not launch
    are never orphaned."""
    claim = instance.node_claim
    if claim:
        return claim not in claims
    return TAG_NODEPOOL in instance.tags and instance.id not in recorded


def is_old_enough(instance: Instance, now: datetime, min_age: timedelta) -> bool:
    """Whether the instance launched at least `min_age` before `now`; False without a known launch time."""
    started = launched_at(instance)
    return started is not None and now - started >= min_age


@dataclass(frozen=True)
class Garbage:
    """What one reading of the instances, NodeClaims and Nodes holds for a round (`find_garbage`):
    `leaked`, the orphaned instances old enough to terminate, in id order; `too_young`, how many orphaned
    ones are not (or launched at an unknown time); `stranded`, the NodeClaims to delete (`is_stranded`),
    and `lost`, each NodeClaim whose Node vanished with that Node's name (`lost_node`), in name order."""

    leaked: list[Instance]
    too_young: int
    stranded: list[Obj]
    lost: list[tuple[Obj, str]]


def find_garbage(
    instances: list[Instance], claims: list[Obj], nodes: dict[str, Obj], now: datetime, min_age: timedelta
) -> Garbage:
    """The garbage among the live `instances`, the NodeClaims `claims` and the Nodes `nodes` (by name) at
    `now`, sparing what is younger than `min_age`: what `collect` acts on and `survey` names."""
    names = {str(claim["metadata"]["name"]) for claim in claims}
    recorded = {instance_id_of(str((claim.get("status") or {}).get("providerID") or "")) for claim in claims}
    orphaned = [i for i in sorted(instances, key=lambda i: i.id) if is_orphaned(i, names, recorded)]
    leaked = [i for i in orphaned if is_old_enough(i, now, min_age)]
    live = {i.id for i in instances}
    by_name = sorted(claims, key=lambda claim: str(claim["metadata"]["name"]))
    return Garbage(
        leaked=leaked,
        too_young=len(orphaned) - len(leaked),
        stranded=[claim for claim in by_name if is_stranded(claim, live, nodes, now, min_age)],
        lost=[(claim, node_name) for claim in by_name if (node_name := lost_node(claim, nodes, now, min_age))],
    )


def launched_at(instance: Instance) -> datetime | None:
    """The instance's launch time (UTC), or None when the cloud did not report a parseable one."""
    return parse_rfc3339(instance.launch_time)


__all__ = [
    "Garbage",
    "find_garbage",
    "is_old_enough",
    "is_orphaned",
    "is_stranded",
    "launched_at",
    "lost_node",
    "node_class_hashes",
]
