"""What an EC2NodeClass names, resolved against the account: its selector terms into subnets, security
groups and AMIs (resolve), AMI aliases to their SSM parameters (amis), the capacity reservations
(capacityreservations) and placement group (placementgroups) it selects, the instance profile for its role
(instanceprofile), and the EKS cluster a node joins (cluster)."""

__all__ = ["amis", "capacityreservations", "cluster", "instanceprofile", "placementgroups", "resolve"]
