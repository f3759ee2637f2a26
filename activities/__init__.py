"""The I/O side of nodeflow's capabilities: the Temporal activities the workflows call and the leader's
background loops beside them, one package per capability. `nodeclaim` holds the lifecycle of one NodeClaim
(one module per phase: launch, registration, initialization, running, termination), `provisioning` the
provisioner's rounds and NodePool and EC2NodeClass status, `disruption` the disruption controller's
decision and its execution, `garbage_collection` the collector and its survey, and `metrics` Karpenter's
Prometheus metrics. The few modules every capability shares stand here: heartbeat (heartbeats of a
synchronous activity) and nodepool_status (a NodePool's status.resources, status.nodes and
NodeRegistrationHealthy)."""

__all__ = ["disruption", "garbage_collection", "heartbeat", "metrics", "nodeclaim", "nodepool_status", "provisioning"]
