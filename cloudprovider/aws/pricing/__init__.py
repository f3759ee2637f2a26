"""Prices, as Karpenter's AWS provider knows them: the on-demand tables shipped with the package, one per
region (tables, their files in `cloudprovider/aws/data/`), the AWS Pricing API that refreshes them (api),
and the region's current on-demand and spot prices that launches are ordered by (pricebook)."""

__all__ = ["api", "pricebook", "tables"]
