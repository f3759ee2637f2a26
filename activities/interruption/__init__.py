"""Involuntary disruption, found by the leader's loops: EC2 interruption events from the SQS queue (spot
interruption, rebalance, scheduled change, instance state change) disrupt their NodeClaims (consumer),
EC2 status checks and scheduled events do the same (instance_status), and node repair, behind the
`NodeRepair` feature gate, replaces Nodes unhealthy for longer than their tolerance (repair)."""

__all__ = ["consumer", "instance_status", "repair"]
