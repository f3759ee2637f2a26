"""Provisioning's simulation, as Karpenter's provisioner schedules: the solver (solver) places pending pods
(pods, parsed once into equivalence classes; provisionable, which of them to provision for; volumes, which
must wait on their volumes) on the cluster as it is (state), on claims in flight and on new NodeClaims
(targets), within the topology domains each pod may go to (domains). NodePools (pools) offer instance-type
options built from the catalog under their node class (catalog), packed as integer matrices (packing),
kept within their limits (limits); the plan reports each claim (output) and says why a pod fits no pool
(explain). manifests turns loaded Kubernetes manifests into a scheduling input for the dry run."""

__all__ = [
    "catalog",
    "domains",
    "explain",
    "limits",
    "manifests",
    "output",
    "packing",
    "pods",
    "pools",
    "provisionable",
    "solver",
    "state",
    "targets",
    "volumes",
]
