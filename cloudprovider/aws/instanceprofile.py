"""The IAM instance profile for a node class's `spec.role`, created on first use (idempotent)."""

from __future__ import annotations

import threading

from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.sdk import IAMAPI
from cloudprovider.errors import CloudProviderError, NodeClassNotReadyError


class InstanceProfiles:
    """Ensures `name` exists and holds `role`. Remembers profiles it has ensured in this process."""

    def __init__(self, iam: IAMAPI, cluster_name: str) -> None:
        self._iam = iam
        self._cluster = cluster_name
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, name: str, role: str | None) -> str:
        """Returns `name`. With `role` None the profile must already exist (spec.instanceProfile)."""
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
                {"Key": f"kubernetes.io/cluster/{self._cluster}", "Value": "owned"},
                {"Key": "karpenter.sh/managed-by", "Value": self._cluster},
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

    def _get(self, name: str) -> dict | None:
        try:
            return dict(
                call("GetInstanceProfile", self._iam.get_instance_profile, InstanceProfileName=name)["InstanceProfile"]
            )
        except CloudProviderError as error:
            if has_code(error, "NoSuchEntity"):
                return None
            raise
