"""The IAM instance profile for a node class's `spec.role`: created on first use (idempotent), deleted with
the node class.

A profile nodeflow creates carries Karpenter's tags: `kubernetes.io/cluster/<cluster>=owned`,
`karpenter.sh/managed-by=<cluster>`, `karpenter.k8s.aws/ec2nodeclass=<node class>` and
`topology.kubernetes.io/region=<region>`. Only a profile carrying the first three (`is_owned`) is ever
deleted, so a profile the user made (`spec.instanceProfile`) is never touched.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from apis.labels import NODECLASS, REGION
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.sdk import IAMAPI
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError
from cloudprovider.types import TAG_CLUSTER_PREFIX, TAG_MANAGED_BY


def profile_tags(cluster_name: str, region: str, node_class_name: str) -> dict[str, str]:
    """The tags a profile nodeflow creates for this node class carries."""
    return {
        TAG_CLUSTER_PREFIX + cluster_name: "owned",
        TAG_MANAGED_BY: cluster_name,
        NODECLASS: node_class_name,
        REGION: region,
    }


def is_owned(profile: Mapping[str, Any], cluster_name: str, node_class_name: str) -> bool:
    """Whether nodeflow created this profile (as GetInstanceProfile returns it) for this node class of
    this cluster: tagged cluster-owned, managed by the cluster and with the node class's name."""
    tags = {str(t.get("Key")): str(t.get("Value", "")) for t in profile.get("Tags") or []}
    return (
        tags.get(TAG_CLUSTER_PREFIX + cluster_name) == "owned"
        and tags.get(TAG_MANAGED_BY) == cluster_name
        and tags.get(NODECLASS) == node_class_name
    )


class InstanceProfiles:
    """Ensures `name` exists and holds `role`. Remembers profiles it has ensured in this process."""

    def __init__(self, iam: IAMAPI, cluster_name: str, region: str) -> None:
        self._iam = iam
        self._cluster = cluster_name
        self._region = region
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, name: str, role: str | None, node_class_name: str) -> str:
        """Returns `name`. With `role` None the profile must already exist (spec.instanceProfile); otherwise
        it is created, tagged for `node_class_name` (see the module docstring), when missing."""
        with self._lock:
            if name in self._known:
                return name
        profile = self._get(name)
        if profile is None:
            if role is None:
                raise NodeClassNotReadyError(
                    f'spec.instanceProfile "{name}" does not exist; create it or set spec.role'
                )
            tags = [
                {"Key": k, "Value": v}
                for k, v in profile_tags(self._cluster, self._region, node_class_name).items()
                if v
            ]
            try:
                call("CreateInstanceProfile", self._iam.create_instance_profile, InstanceProfileName=name, Tags=tags)
            except CloudProviderError as error:
                if not has_code(error, "EntityAlreadyExists"):
                    raise
            profile = self._get(name) or {"Roles": []}
        if role is not None and not any(r.get("RoleName") == role for r in profile.get("Roles", [])):
            try:
                call(
                    "AddRoleToInstanceProfile",
                    self._iam.add_role_to_instance_profile,
                    InstanceProfileName=name,
                    RoleName=role,
                )
            except CloudProviderError as error:
                if not has_code(error, "LimitExceeded", "EntityAlreadyExists"):
                    raise NodeClassNotReadyError(f'spec.role "{role}": {error}') from error
        with self._lock:
            self._known.add(name)
        return name

    def delete(self, name: str, node_class_name: str) -> bool:
        """Delete the profile `name` if nodeflow created it for this node class (`is_owned`): its roles
        removed first, as IAM requires. True when it was deleted; False when it does not exist or is not
        nodeflow's (then nothing is changed). Forgets `name`, so ensuring it again creates it."""
        with self._lock:
            self._known.discard(name)
        profile = self._get(name)
        if profile is None or not is_owned(profile, self._cluster, node_class_name):
            return False
        try:
            for role in profile.get("Roles", []):
                call(
                    "RemoveRoleFromInstanceProfile",
                    self._iam.remove_role_from_instance_profile,
                    InstanceProfileName=name,
                    RoleName=role["RoleName"],
                )
            call("DeleteInstanceProfile", self._iam.delete_instance_profile, InstanceProfileName=name)
        except CloudProviderError as error:
            if has_code(error, "NoSuchEntity"):  # deleted meanwhile by another worker
                return False
            raise
        return True

    def _get(self, name: str) -> dict | None:
        try:
            return dict(
                call("GetInstanceProfile", self._iam.get_instance_profile, InstanceProfileName=name)["InstanceProfile"]
            )
        except CloudProviderError as error:
            if has_code(error, "NoSuchEntity"):
                return None
            raise
