"""cloudprovider.aws.nodeclass.instanceprofile.InstanceProfiles.ensure: a profile holds spec.role and no other; a
profile nodeflow did not make is never changed."""

from __future__ import annotations

from typing import Any

import pytest

from cloudprovider.aws.nodeclass.instanceprofile import InstanceProfiles, profile_tags
from cloudprovider.errors import NodeClassNotReadyError


class FakeIAM:
    """Instance profiles in memory, with IAM's one-role-per-profile limit; records each call's name."""

    def __init__(self) -> None:
        self.profiles: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    def get_instance_profile(self, InstanceProfileName: str) -> dict[str, Any]:
        self.calls.append("GetInstanceProfile")
        if InstanceProfileName not in self.profiles:
            raise _error("NoSuchEntity")
        return {"InstanceProfile": self.profiles[InstanceProfileName]}

    def create_instance_profile(self, InstanceProfileName: str, Tags: list[dict[str, str]]) -> dict[str, Any]:
        self.calls.append("CreateInstanceProfile")
        self.profiles[InstanceProfileName] = {"InstanceProfileName": InstanceProfileName, "Roles": [], "Tags": Tags}
        return {}

    def add_role_to_instance_profile(self, InstanceProfileName: str, RoleName: str) -> dict[str, Any]:
        self.calls.append("AddRoleToInstanceProfile")
        roles = self.profiles[InstanceProfileName]["Roles"]
        if roles:
            raise _error("LimitExceeded")
        roles.append({"RoleName": RoleName})
        return {}

    def remove_role_from_instance_profile(self, InstanceProfileName: str, RoleName: str) -> dict[str, Any]:
        self.calls.append("RemoveRoleFromInstanceProfile")
        roles = self.profiles[InstanceProfileName]["Roles"]
        roles[:] = [r for r in roles if r["RoleName"] != RoleName]
        return {}


def _error(code: str) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": code}}, "op")


def profiles_of(iam: FakeIAM) -> InstanceProfiles:
    return InstanceProfiles(iam, "c", "us-west-2")  # type: ignore[arg-type]


def _roles(iam: FakeIAM, name: str) -> list[str]:
    return [r["RoleName"] for r in iam.profiles[name]["Roles"]]


def test_a_profile_is_created_with_the_role_and_checked_once_per_role() -> None:
    iam = FakeIAM()
    profiles = profiles_of(iam)
    profiles.ensure("c_1", "RoleA", "default")
    profiles.ensure("c_1", "RoleA", "default")
    assert _roles(iam, "c_1") == ["RoleA"]
    assert iam.calls.count("GetInstanceProfile") == 2  # before and after creating it; the second ensure is remembered


def test_a_changed_role_replaces_the_old_one_in_nodeflows_profile() -> None:
    iam = FakeIAM()
    profiles = profiles_of(iam)
    profiles.ensure("c_1", "RoleA", "default")
    profiles.ensure("c_1", "RoleB", "default")
    assert _roles(iam, "c_1") == ["RoleB"]


def test_a_profile_nodeflow_did_not_make_is_left_with_its_role_and_the_error_names_both() -> None:
    iam = FakeIAM()
    iam.profiles["c_1"] = {"InstanceProfileName": "c_1", "Roles": [{"RoleName": "TheirRole"}], "Tags": []}
    profiles = profiles_of(iam)
    with pytest.raises(NodeClassNotReadyError, match=r'holds role "TheirRole", not spec\.role "RoleB"'):
        profiles.ensure("c_1", "RoleB", "default")
    assert _roles(iam, "c_1") == ["TheirRole"]


def test_a_role_another_worker_added_meanwhile_is_accepted_when_it_is_the_same() -> None:
    iam = FakeIAM()
    tags = [{"Key": k, "Value": v} for k, v in profile_tags("c", "us-west-2", "default").items()]
    iam.profiles["c_1"] = {"InstanceProfileName": "c_1", "Roles": [], "Tags": tags}
    profiles = profiles_of(iam)
    real_get = iam.get_instance_profile

    def stale_get(InstanceProfileName: str) -> dict[str, Any]:
        found = real_get(InstanceProfileName)
        if iam.calls.count("GetInstanceProfile") == 1:  # the first read sees no role; another worker adds it
            iam.profiles["c_1"]["Roles"] = [{"RoleName": "RoleA"}]
            return {"InstanceProfile": {**found["InstanceProfile"], "Roles": []}}
        return found

    iam.get_instance_profile = stale_get  # type: ignore[method-assign]
    assert profiles.ensure("c_1", "RoleA", "default") == "c_1"
