"""The registration phase of a NodeClaim (Karpenter: nodeclaim/lifecycle/registration.go): find the Node
whose providerID is the claim's instance, then sync the claim onto it and mark the claim Registered.

One activity, `register`, does all three and then the first initialization check (the initialization
phase always begins with it), so a node found at the first look costs the workflow one command. The
workflow calls it again when the worker's Node watch signals that the claim's Node appeared or changed
(workers.watchers), not on a fast poll.

Karpenter's AWS provider hooks into registration for placement groups: EC2 picks the partition of an
instance in a partition group, so the `karpenter.k8s.aws/placement-group-partition` label of a claim
launched without it (EC2 had not reported it at launch) is read from the instance before the Node is
synced, and topology spread over partitions sees it from the Node's first schedulable moment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities import nodepool_status
from activities.metrics.labels import zone_of
from activities.nodeclaim import ownership
from activities.nodeclaim import translate as claims
from activities.nodeclaim.initialization import InitializationActivities, InitializationResult
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from apis import labels
from apis.meta import is_true
from apis.nodeclaim import REGISTERED, NodeClaim
from cloudprovider.errors import InstanceNotFoundError
from cloudprovider.types import instance_id_of
from kube import resources as r
from kube.errors import NotFoundError
from kube.types import Obj


class FindNodeInput(ClaimRef):
    """The claim, and the providerID its Node will carry (the instance's)."""

    provider_id: str


class NodeRef(BaseModel):
    """The Node of a claim, once registered ('' before), with its uid; `claim_gone` when the NodeClaim no
    longer exists (or the name is another claim's): the workflow ends without waiting for a Node."""

    node_name: str = ""
    node_uid: str = ""
    claim_gone: bool = False


class Registration(NodeRef):
    """`register`'s result: the Node (registered now) and its first initialization check; `initialization`
    is None while no Node was found."""

    initialization: InitializationResult | None = None


class RegistrationActivities(InitializationActivities):
    """`register` (`find_node`, `register_node`, then `check_initialized`)."""

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [self.register]

    @activity.defn(name="register")
    def register(self, inp: FindNodeInput) -> Registration:
        """Find the claim's Node (`find_node`); once found, register it (`register_node`) and check its
        initialization once (`check_initialized`)."""
        found = self.find_node(inp)
        if not found.node_name:
            return Registration(**found.model_dump())
        ident = ClaimIdentity(
            name=inp.name, uid=inp.uid, provider_id=inp.provider_id, node_name=found.node_name, node_uid=found.node_uid
        )
        self.register_node(ident)
        return Registration(**found.model_dump(), initialization=self.check_initialized(ident))

    def find_node(self, inp: FindNodeInput) -> NodeRef:
        """The Node whose spec.providerID is the claim's instance (name and uid), or '' if it has not
        registered yet; `claim_gone` when the claim itself no longer exists."""
        claim = self._claim_obj(inp)
        if claim is None:
            return NodeRef(claim_gone=True)
        node = self._node_with(inp.provider_id)
        if node is not None:
            return NodeRef(node_name=node["metadata"]["name"], node_uid=node["metadata"].get("uid", ""))
        if not is_true(NodeClaim.model_validate(claim).status.conditions, REGISTERED):
            message = f"Node not registered with cluster: waiting for a Node with providerID {inp.provider_id}"
            self._set_conditions(inp, (REGISTERED, "Unknown", "NodeNotFound", message))
        return NodeRef()

    def _node_with(self, provider_id: str) -> Obj | None:
        """The Node whose spec.providerID is `provider_id`: the one the node directory names (read to
        confirm it), none when the directory is complete and names none, else found in a LIST of Nodes
        (no directory, or the one it named is gone or changed)."""
        complete, known = self.nodes.find(provider_id)
        if known is not None:
            try:
                node = self.kube.get(r.NODE, known[0])
            except NotFoundError:
                node = None
            if node is not None and node.get("spec", {}).get("providerID") == provider_id:
                return node
        elif complete:
            return None
        return next((n for n in self.kube.list(r.NODE) if n.get("spec", {}).get("providerID") == provider_id), None)

    def register_node(self, ident: ClaimIdentity) -> None:
        """Sync the claim's labels, annotations and taints onto the Node, add the termination finalizer and
        the registered label, drop the unregistered taint; set nodeName and Registered on the claim; mark
        the claim's NodePool NodeRegistrationHealthy (its counts follow at the disruption controller's next
        round, activities.disruption.decision). The call that sets Registered counts the Node in
        `karpenter_nodes_created_total` and times the registration. A gone claim, or a Node that is not the
        claim's, is left alone."""
        claim = self._claim(ident)
        if claim is None:
            return
        claim = self._with_partition(ident, claim)
        ownership.update(self.kube, self._own_node(ident), lambda node: claims.sync_node(node, claim))
        self._set_conditions(
            ident, (REGISTERED, "True", "Registered", f"node {ident.node_name} registered"), node_name=ident.node_name
        )
        pool = self._pool_of(claim)
        if not is_true(claim.status.conditions, REGISTERED):
            self._observe_startup(claim, REGISTERED)
            self.metrics.nodes_created.labels(nodepool=pool, zone=zone_of(claim.metadata.labels)).inc()
        nodepool_status.set_registration_health(self.kube, pool, True, f"node {ident.node_name} registered")

    def _with_partition(self, ident: ClaimIdentity, claim: NodeClaim) -> NodeClaim:
        """The claim with its placement group partition label: a claim in a placement group without one
        gets the partition its instance reports, written to the claim too. Unchanged when the instance
        reports none (a cluster or spread group) or is gone."""
        current = claim.metadata.labels
        if not current.get(labels.PLACEMENT_GROUP_ID) or labels.PLACEMENT_GROUP_PARTITION in current:
            return claim
        try:
            partition = self.cloud.get(instance_id_of(ident.provider_id)).placement_group_partition
        except InstanceNotFoundError:
            return claim
        if not partition:
            return claim

        def add_label(obj: Obj) -> bool:
            meta = obj["metadata"]
            if (meta.get("labels") or {}).get(labels.PLACEMENT_GROUP_PARTITION) == partition:
                return False
            meta["labels"] = {**(meta.get("labels") or {}), labels.PLACEMENT_GROUP_PARTITION: partition}
            return True

        ownership.update(self.kube, self._own_claim(ident), add_label)
        with_label = {**current, labels.PLACEMENT_GROUP_PARTITION: partition}
        return claim.model_copy(update={"metadata": claim.metadata.model_copy(update={"labels": with_label})})
