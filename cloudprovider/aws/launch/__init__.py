"""Launching an instance for a NodeClaim, as Karpenter's AWS provider launches: CreateFleet of type
instant (create), what a launch reads of its node class from EC2 and SSM (reads), the launch templates it
names (launchtemplate), concurrent launches of one shape batched into one CreateFleet (fleet_batcher), the
offerings a fleet may choose from (fleet_overrides), the user data that joins a node to the cluster
(userdata, with tomlwriter for Bottlerocket), and the dry-run launch that says whether a node class is
authorized to launch at all (authorization)."""

__all__ = [
    "authorization",
    "create",
    "fleet_batcher",
    "fleet_overrides",
    "launchtemplate",
    "reads",
    "tomlwriter",
    "userdata",
]
