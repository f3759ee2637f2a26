"""cloudprovider/aws package: the AWS implementation of the cloud provider boundary."""
