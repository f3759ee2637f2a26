"""cloudprovider package."""
