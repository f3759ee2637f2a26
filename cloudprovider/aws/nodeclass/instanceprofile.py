"""The IAM instance profile for a node class's `spec.role`: created on first use (idempotent), deleted with
the node class.

A profile nodeflow creates carries the tags Karpenter v1 puts on the profiles it creates: the EC2NodeClass's
`spec.tags`, then `kubernetes.io/cluster/<cluster>=owned`, `eks:eks-cluster-name=<cluster>`,
`karpenter.k8s.aws/ec2nodeclass=<node class>` and `topology.kubernetes.io/region=<region>`, which win over
`spec.tags` (Karpenter's `EC2NodeClass.InstanceProfileTags` assigns them last; its validation also refuses
these keys in `spec.tags`, as `apis.ec2nodeclass` does). The controller policy
(`cloudprovider.aws.iam_policy`) lets the role create a profile only with these tags and change or delete
one only when it carries the cluster, region and node class tags. So a profile is nodeflow's
(`is_owned`) when it carries those three for this cluster, region and node class: one Karpenter made for the
same node class counts (same tags), one of the same cluster name in another region does not (IAM is
global; the policy would refuse the change anyway), and a profile the user made (`spec.instanceProfile`)
is never touched.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from apis.labels import NODECLASS, REGION
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.sdk import IAMAPI
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError
from cloudprovider.types import TAG_CLUSTER_PREFIX, TAG_EKS_CLUSTER_NAME


def profile_tags(
    cluster_name: str, region: str, node_class_name: str, spec_tags: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The tags a profile nodeflow creates for this node class carries: `spec_tags` (the EC2NodeClass's
    `spec.tags`), then the cluster, EKS cluster name, node class and region tags, which override them."""
    return {
        **(spec_tags or {}),
        TAG_CLUSTER_PREFIX + cluster_name: "owned",
        TAG_EKS_CLUSTER_NAME: cluster_name,
        NODECLASS: node_class_name,
        REGION: region,
    }


def is_owned(profile: Mapping[str, Any], cluster_name: str, region: str, node_class_name: str) -> bool:
    """Whether this profile (as GetInstanceProfile returns it) was made by nodeflow or Karpenter for this node
    class of this cluster in this region: tagged cluster-owned, with the region and the node class's name
    (the tags the policy's profile statements require)."""
    tags = {str(t.get("Key")): str(t.get("Value", "")) for t in profile.get("Tags") or []}
    return (
        tags.get(TAG_CLUSTER_PREFIX + cluster_name) == "owned"
        and tags.get(REGION) == region
        and tags.get(NODECLASS) == node_class_name
    )


class InstanceProfiles:
    """Ensures `name` exists and holds `role`. Remembers the role each profile it has ensured in this process
    holds."""

    def __init__(self, iam: IAMAPI, cluster_name: str, region: str) -> None:
        self._iam = iam
        self._cluster = cluster_name
        self._region = region
        self._known: dict[str, str | None] = {}  # profile name -> the role ensured in it (None: the user's)
        self._lock = threading.Lock()

    def ensure(
        self, name: str, role: str | None, node_class_name: str, spec_tags: Mapping[str, str] | None = None
    ) -> str:
        """Returns `name`. With `role` None the profile must already exist (spec.instanceProfile); otherwise
        it is created, tagged for `node_class_name` and with `spec_tags` (see the module docstring), when
        missing, and made to
        hold `role`. A profile holds one role, so when `spec.role` changed, the one a profile nodeflow made
        holds is replaced by the new one, as Karpenter does (new nodes boot with the new role, and the
        running ones, which share the profile, take it at their next credential refresh; the node class's
        hash changed too, so they drift and are replaced). A profile nodeflow did not make that holds
        another role is left alone: NodeClassNotReadyError names both roles."""
        with self._lock:
            if name in self._known and self._known[name] == role:
                return name
        profile = self._get(name)
        if profile is None:
            if role is None:
                raise NodeClassNotReadyError(
                    f'spec.instanceProfile "{name}" does not exist; create it or set spec.role'
                )
            try:
                call("CreateInstanceProfile", self._iam.create_instance_profile,
                     **self.create_request(name, node_class_name, spec_tags))  # fmt: skip
            except CloudProviderError as error:
                if not has_code(error, "EntityAlreadyExists"):
                    raise
            profile = self._get(name) or {"Roles": []}
        if role is not None:
            self._hold(profile, name, role, node_class_name)
        with self._lock:
            self._known[name] = role
        return name

    def create_request(
        self, name: str, node_class_name: str, spec_tags: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The CreateInstanceProfile parameters for the profile `name` of `node_class_name` (its tags, empty
        values left out)."""
        tags = profile_tags(self._cluster, self._region, node_class_name, spec_tags)
        return {"InstanceProfileName": name, "Tags": [{"Key": k, "Value": v} for k, v in tags.items() if v]}

    def _hold(self, profile: Mapping[str, Any], name: str, role: str, node_class_name: str) -> None:
        """Make the profile `name` (as GetInstanceProfile returned it) hold `role` and no other."""
        held = [str(r.get("RoleName")) for r in profile.get("Roles") or []]
        if role in held:
            return
        for other in held:
            if not is_owned(profile, self._cluster, self._region, node_class_name):
                raise NodeClassNotReadyError(
                    f'instance profile "{name}" holds role "{other}", not spec.role "{role}", and nodeflow did not '
                    "create it; remove that role from it or delete the profile"
                )
            try:
                call(
                    "RemoveRoleFromInstanceProfile",
                    self._iam.remove_role_from_instance_profile,
                    InstanceProfileName=name,
                    RoleName=other,
                )
            except CloudProviderError as error:
                if not has_code(error, "NoSuchEntity"):  # removed meanwhile by another worker
                    raise
        try:
            call("AddRoleToInstanceProfile", self._iam.add_role_to_instance_profile, InstanceProfileName=name,
                 RoleName=role)  # fmt: skip
        except CloudProviderError as error:
            if has_code(error, "EntityAlreadyExists"):
                return
            if has_code(error, "LimitExceeded"):  # another worker gave it a role since the read: which one?
                now = self._get(name) or {}
                if any(r.get("RoleName") == role for r in now.get("Roles") or []):
                    return
                raise NodeClassNotReadyError(f'instance profile "{name}" got another role meanwhile') from error
            raise NodeClassNotReadyError(f'spec.role "{role}": {error}') from error

    def delete(self, name: str, node_class_name: str) -> bool:
        """Delete the profile `name` if nodeflow created it for this node class (`is_owned`): its roles
        removed first, as IAM requires. True when it was deleted; False when it does not exist or is not
        nodeflow's (then nothing is changed). Forgets `name`, so ensuring it again creates it."""
        with self._lock:
            self._known.pop(name, None)
        profile = self._get(name)
        if profile is None or not is_owned(profile, self._cluster, self._region, node_class_name):
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
