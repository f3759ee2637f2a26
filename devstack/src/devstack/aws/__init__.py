"""The AWS side of the embedded local stack: a seeded, patched moto server.

Importing the package shares one botocore loader in the process (``devstack.aws.botocore_loader``)
before any of its modules imports moto.
"""

from devstack.aws import botocore_loader

botocore_loader.install()
