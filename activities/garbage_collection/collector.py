"""Garbage collection, both ways: instances whose NodeClaim is gone, and NodeClaims whose instance is gone.

An instance leaks when its NodeClaim disappears without the claim's workflow terminating it: a lost
Temporal namespace, a cluster restored from a backup, or someone removing the claim's finalizer. The
collector terminates such instances once they are older than a minimum age, so an instance whose claim
is being created right now is never raced (claims are always created before their instance). An
instance nodeflow launched (it carries a `karpenter.sh/nodepool` tag) without a claim tag leaks too when
no NodeClaim records it as its instance: a launch batched into one CreateFleet tags each instance with
its claim just after the fleet returns, and a worker that died in between leaves such an instance.

A NodeClaim is stranded when its instance ends outside nodeflow (terminated in the console, a spot
reclaim nobody handled). As Karpenter's NodeClaim garbage collection does, a registered NodeClaim whose
instance is no longer among the cluster's live instances and whose Node is not Ready (or gone) is deleted,
with the event `InstanceGone` on it; its workflow then drains what is left and deletes the Node. The same
minimum age, counted from the claim's launch, spares a claim whose instance the listing may not show yet.

A launch template is stale when no EC2NodeClass uses it: its node class is gone, or has another static
hash than the one the template was made under (`cloudprovider.aws.launch.launchtemplate.is_stale`). Each round
deletes the stale ones nodeflow created that are older than the same minimum age; a launch that still
names one recreates it. A failure there is logged and reported in the result, never taken out on the
instance and NodeClaim collection.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field
from temporalio import activity

from activities.garbage_collection.predicates import find_garbage, node_class_hashes
from activities.nodeclaim import ownership
from apis import labels
from cloudprovider.errors import CloudProviderError, InstanceNotFoundError
from cloudprovider.types import CloudProvider, Instance, instance_id_of
from kube import resources as r
from kube import watch_cache
from kube.events import EventRecorder
from kube.types import Kube, Obj
from kube.watch_cache import WatchCache

log = logging.getLogger(__name__)

DEFAULT_MIN_AGE_SECONDS = 120


class CollectInput(BaseModel):
    """`min_age_seconds`: an instance launched less than this long ago is left alone."""

    min_age_seconds: int = Field(default=DEFAULT_MIN_AGE_SECONDS, ge=0)


class LeakedInstance(BaseModel):
    """An instance the collector terminated, and why."""

    instance_id: str
    node_claim: str
    launch_time: str = ""
    terminated_at: str = ""


class StrandedClaim(BaseModel):
    """A NodeClaim the collector deleted because its instance no longer exists."""

    node_claim: str
    instance_id: str
    node_name: str = ""
    deleted_at: str = ""


class LostClaim(BaseModel):
    """A NodeClaim whose workflow must terminate it: its Node or the NodeClaim itself vanished."""

    node_claim: str
    reason: str


class CollectResult(BaseModel):
    """One collection round. `checked`: live instances of the cluster seen; `too_young`: leaked-looking
    instances spared because they launched less than the minimum age ago (or at an unknown time); `terminated`: what was
    terminated (or was found already terminating), in instance id order; `deleted_claims`: NodeClaims
    deleted because their instance is gone, in name order; `deleted_launch_templates`: stale launch
    templates deleted; `launch_template_error`: why looking for them failed this round ('' when it did not);
    `lost_claims`: claims whose Node or NodeClaim vanished, for the collector to signal `delete` (see the
    module docstring), in name order."""

    checked: int = 0
    too_young: int = 0
    terminated: list[LeakedInstance] = Field(default_factory=list)
    deleted_claims: list[StrandedClaim] = Field(default_factory=list)
    deleted_launch_templates: list[str] = Field(default_factory=list)
    launch_template_error: str = ""
    lost_claims: list[LostClaim] = Field(default_factory=list)


class GarbageCollectionActivities:
    """Activities of the garbage collector workflow, over the cloud and Kubernetes boundaries."""

    def __init__(self, kube: Kube, cloud: CloudProvider, recorder: EventRecorder | None = None) -> None:
        self.kube = kube
        self.cloud = cloud
        self.recorder = recorder or EventRecorder(kube)

    @activity.defn(name="collect_leaked_instances")
    def collect(self, inp: CollectInput) -> CollectResult:
        """Terminate every live instance of the cluster tagged with a NodeClaim that does not exist, or
        launched by nodeflow without a claim tag and recorded by no NodeClaim, that launched at least
        `min_age_seconds` ago; then delete every NodeClaim stranded without its instance (`is_stranded`),
        then the stale launch templates at least that old (see the module docstring). Instances without
        a known launch time, and untagged ones nodeflow did not launch, are never touched.
        Idempotent; a failure to list either side raises (retried), it is never taken to mean "no
        claims" or "no instances"."""
        instances, claim_objects, nodes = self._read(None)
        now = datetime.now(UTC)
        garbage = find_garbage(instances, claim_objects, nodes, now, timedelta(seconds=inp.min_age_seconds))
        result = CollectResult(checked=len(instances), too_young=garbage.too_young)
        for instance in garbage.leaked:
            claim = instance.node_claim
            try:
                self.cloud.delete(instance.id)
            except InstanceNotFoundError:
                continue  # terminated meanwhile: nothing leaked
            log.warning(
                "terminated leaked instance %s: %s",
                instance.id,
                f"its NodeClaim {claim} does not exist" if claim else "no NodeClaim tag and no NodeClaim records it",
            )
            result.terminated.append(
                LeakedInstance(
                    instance_id=instance.id,
                    node_claim=claim or "",
                    launch_time=instance.launch_time,
                    terminated_at=now.isoformat(),
                )
            )
        result.deleted_claims = self._delete_stranded(garbage.stranded, now)
        result.lost_claims = self._lost_claims(garbage.lost, result)
        hashes = node_class_hashes(self.kube.list(r.EC2NODECLASS))
        try:
            result.deleted_launch_templates = self.cloud.delete_stale_launch_templates(hashes, inp.min_age_seconds)
        except CloudProviderError as error:
            log.warning("deleting stale launch templates failed; next round tries again: %s", error)
            result.launch_template_error = str(error)
        if result.deleted_launch_templates:
            log.info("deleted stale launch templates %s", result.deleted_launch_templates)
        return result

    def survey(self, inp: CollectInput, cache: WatchCache | None = None) -> list[str]:
        """What a `collect` round would act on now, one line each, acting on nothing: the leaked instances
        it would terminate, the stranded NodeClaims it would delete, the NodeClaims whose Node vanished
        and the stale launch templates. Reads as `collect` does (`find_garbage`), NodeClaims, Nodes and
        EC2NodeClasses from `cache` once it is synced (else LISTs them). For the leader, which asks the
        collector for a round only when this is not empty; raises as `collect` does when a side cannot be
        read."""
        instances, claim_objects, nodes = self._read(cache)
        garbage = find_garbage(
            instances, claim_objects, nodes, datetime.now(UTC), timedelta(seconds=inp.min_age_seconds)
        )
        found = [
            f"instance {i.id}: leaked ({f'NodeClaim {i.node_claim} does not exist' if i.node_claim else 'untracked'})"
            for i in garbage.leaked
        ]
        stranded = [str(claim["metadata"]["name"]) for claim in garbage.stranded]
        found += [f"NodeClaim {name}: its instance is gone" for name in stranded]
        found += [
            f"NodeClaim {name}: its Node {node_name} is gone"
            for claim, node_name in garbage.lost
            if (name := str(claim["metadata"]["name"])) not in stranded
        ]
        hashes = node_class_hashes(watch_cache.read(self.kube, r.EC2NODECLASS, cache))
        stale = self.cloud.stale_launch_templates(hashes, inp.min_age_seconds)
        found += [f"launch template {name}: stale" for name in stale]
        return found

    def _read(self, cache: WatchCache | None) -> tuple[list[Instance], list[Obj], dict[str, Obj]]:
        """The cluster's live instances, its NodeClaims and, when any NodeClaim has launched, its Nodes by
        name: NodeClaims and Nodes from `cache` once it is synced, else LISTed. Instances first, claims
        second: every instance's claim was created before the instance, so a claim missing from the later
        list was deleted, not yet to be created."""
        instances = self.cloud.list()
        claims = watch_cache.read(self.kube, r.NODECLAIM, cache)
        launched = any((c.get("status") or {}).get("providerID") for c in claims)
        nodes = {n["metadata"]["name"]: n for n in watch_cache.read(self.kube, r.NODE, cache)} if launched else {}
        return instances, claims, nodes

    @staticmethod
    def _lost_claims(lost: list[tuple[Obj, str]], result: CollectResult) -> list[LostClaim]:
        deleted = {c.node_claim for c in result.deleted_claims}  # their deletion is signalled by the watcher
        found = [LostClaim(node_claim=i.node_claim, reason=f"the NodeClaim {i.node_claim} no longer exists")
                 for i in result.terminated]  # fmt: skip
        found += [
            LostClaim(node_claim=name, reason=f"Node {node_name} no longer exists")
            for claim, node_name in lost
            if (name := str(claim["metadata"]["name"])) not in deleted
        ]
        return sorted(found, key=lambda c: c.node_claim)

    def _delete_stranded(self, stranded: list[Obj], now: datetime) -> list[StrandedClaim]:
        deleted: list[StrandedClaim] = []
        for claim in stranded:
            name = str(claim["metadata"]["name"])
            instance_id = instance_id_of(str(claim["status"]["providerID"]))
            node_name = str(claim["status"].get("nodeName") or "")
            if not ownership.delete(self.kube, ownership.node_claim(name, str(claim["metadata"].get("uid", "")))):
                continue  # deleted meanwhile, or another NodeClaim now has the name
            message = (
                f"its instance {instance_id} no longer exists in the cloud provider (terminated outside "
                f"nodeflow); deleting the NodeClaim{f' and its Node {node_name}' if node_name else ''}"
            )
            pool = str((claim["metadata"].get("labels") or {}).get(labels.NODEPOOL, ""))
            log.warning(
                "NodeClaim %s: %s", name, message, extra={"nodeclaim": name, "node": node_name, "nodepool": pool}
            )
            self.recorder.record(claim, "Warning", "InstanceGone", message)
            deleted.append(StrandedClaim(node_claim=name, instance_id=instance_id, node_name=node_name,
                                         deleted_at=now.isoformat()))  # fmt: skip
        return deleted


__all__ = [
    "CollectInput",
    "CollectResult",
    "GarbageCollectionActivities",
    "LeakedInstance",
    "LostClaim",
    "StrandedClaim",
]
