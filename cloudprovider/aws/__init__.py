"""cloudprovider/aws package."""
