"""The I/O side of nodeflow's capabilities: the Temporal activities the workflows call and the leader's
background loops beside what they drive, one package per capability. `nodeclaim` holds the lifecycle of one NodeClaim
(one module per phase: launch, registration, initialization, running, termination), `provisioning` the
provisioner's rounds and NodePool and EC2NodeClass status, `disruption` the disruption controller's
decision, its execution and the leader's look ahead, `interruption` involuntary disruption (the SQS
interruption queue, EC2 status checks, node repair), `garbage_collection` the collector and its survey, and
`metrics` Karpenter's Prometheus metrics and the leader's cluster-state refresh. The few modules every
capability shares stand here: heartbeat (heartbeats of a synchronous activity), periodic (a leader's loop
that runs one step every interval) and nodepool_status (a NodePool's status.resources, status.nodes and
NodeRegistrationHealthy)."""

__all__ = [
    "disruption",
    "garbage_collection",
    "heartbeat",
    "interruption",
    "metrics",
    "nodeclaim",
    "nodepool_status",
    "periodic",
    "provisioning",
]
