"""Provisioning, as Karpenter's provisioner: the activities of the provisioner workflow's rounds
(provisioner: read the cluster and solve, then apply the plan), their payloads (models), the creation of
planned NodeClaims and their workflows, shared with the disruption controller's replacements
(claim_creation), and the status provisioning needs of NodePools and EC2NodeClasses (status,
nodeclass_status, nodeclass_termination), kept current by the leader while no pod is pending
(status_refresh), and the prices launches are ordered by (price_refresh)."""

__all__ = [
    "claim_creation",
    "models",
    "nodeclass_status",
    "nodeclass_termination",
    "price_refresh",
    "provisioner",
    "status",
    "status_refresh",
]
