"""The lifecycle of one NodeClaim, as Karpenter's nodeclaim/lifecycle controller: one module per phase of
the NodeClaim workflow (launch, registration, initialization, running, termination, in that order), the
payloads they share (models), what every phase acts through (base, ownership: the only writes to a claim's
own NodeClaim and Node), the pure translations between a claim and its instance and Node (translate), the
facts a drift check compares (drift) and the VolumeAttachments a drained node waits for
(volume_detachment). The leader's claim sweep (sweep) signals the claims past their expireAfter
(expiration) and those whose drift finding changed. `lifecycle.node_claim_activities` is what a worker
registers for the workflow."""

__all__ = [
    "base",
    "drift",
    "expiration",
    "initialization",
    "launch",
    "lifecycle",
    "models",
    "ownership",
    "registration",
    "running",
    "sweep",
    "termination",
    "translate",
    "volume_detachment",
]
