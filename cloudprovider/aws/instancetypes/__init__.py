"""Instance types: EC2 `InstanceTypeInfo` translated into nodeflow's `InstanceType` with its capacity,
overhead and labels (translate), a region's catalog of types and their zone offerings with prices
(offerings), and the built-in catalog `nodeflow simulate` reads without an AWS account (catalog, its files
in `cloudprovider/aws/data/`)."""

__all__ = ["catalog", "offerings", "translate"]
