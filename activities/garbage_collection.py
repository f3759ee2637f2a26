"""Garbage collection of leaked instances: live instances of this cluster whose NodeClaim is gone.

An instance leaks when its NodeClaim disappears without the claim's workflow terminating it: a lost
Temporal namespace, a cluster restored from a backup, or someone removing the claim's finalizer. The
collector terminates such instances once they are older than a minimum age, so an instance whose claim
is being created right now is never raced (claims are always created before their instance).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field
from temporalio import activity

from apis.meta import parse_rfc3339
from cloudprovider.errors import InstanceNotFoundError
from cloudprovider.types import CloudProvider, Instance
from kube import resources as r
from kube.types import Kube

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


class CollectResult(BaseModel):
    """One collection round. `checked`: live instances of the cluster seen; `too_young`: leaked-looking
    instances spared because they launched less than the minimum age ago (or at an unknown time); `terminated`: what was
    terminated (or was found already terminating), in instance id order."""

    checked: int = 0
    too_young: int = 0
    terminated: list[LeakedInstance] = Field(default_factory=list)


def launched_at(instance: Instance) -> datetime | None:
    """The instance's launch time (UTC), or None when the cloud did not report a parseable one."""
    return parse_rfc3339(instance.launch_time)


class GarbageCollectionActivities:
    """Activities of the garbage collector workflow, over the cloud and Kubernetes boundaries."""

    def __init__(self, kube: Kube, cloud: CloudProvider) -> None:
        self.kube = kube
        self.cloud = cloud

    @activity.defn(name="collect_leaked_instances")
    def collect(self, inp: CollectInput) -> CollectResult:
        """Terminate every live instance of the cluster tagged with a NodeClaim that does not exist and
        launched at least `min_age_seconds` ago. Instances without a claim tag or without a known launch
        time are never touched. Idempotent; a failure to list either side raises (retried), it is never
        taken to mean "no claims"."""
        # Instances first, claims second: every instance's claim was created before the instance, so a
        # claim missing from the later list was deleted, not yet to be created.
        instances = self.cloud.list()
        claims = {obj["metadata"]["name"] for obj in self.kube.list(r.NODECLAIM)}
        now = datetime.now(UTC)
        min_age = timedelta(seconds=inp.min_age_seconds)
        result = CollectResult(checked=len(instances))
        for instance in sorted(instances, key=lambda i: i.id):
            claim = instance.node_claim
            if not claim or claim in claims:
                continue
            started = launched_at(instance)
            if started is None or now - started < min_age:
                result.too_young += 1
                continue
            try:
                self.cloud.delete(instance.id)
            except InstanceNotFoundError:
                continue  # terminated meanwhile: nothing leaked
            log.warning("terminated leaked instance %s: its NodeClaim %s does not exist", instance.id, claim)
            result.terminated.append(
                LeakedInstance(
                    instance_id=instance.id,
                    node_claim=claim,
                    launch_time=instance.launch_time,
                    terminated_at=now.isoformat(),
                )
            )
        return result


__all__ = ["CollectInput", "CollectResult", "GarbageCollectionActivities", "LeakedInstance", "launched_at"]
