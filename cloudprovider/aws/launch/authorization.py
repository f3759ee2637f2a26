"""Karpenter's EC2NodeClass `ValidationSucceeded`: can the controller launch with this node class?

While one of the node class's subnets, security groups, AMIs and instance profile does not resolve, the
condition is False with Karpenter's reason DependenciesNotReady (AWAITING). Once they resolve, the three
calls a launch makes are sent with `DryRun`, as a launch would send them: CreateFleet (with a stand-in launch
template, as Karpenter sends it), CreateLaunchTemplate (the node class's own template data: AMI, user
data, instance profile, security groups, block devices, metadata options, tags) and RunInstances (that
data in the first subnet). EC2 answers DryRunOperation when the caller may make the call and
UnauthorizedOperation when its IAM policy (or an SCP) forbids it, tag conditions included. So a policy
that forbids a launch makes the node class not ready, with Karpenter's reasons, before any NodeClaim
fails:

| call | reason | message |
| --- | --- | --- |
| CreateFleet | CreateFleetAuthCheckFailed | Controller isn't authorized to call ec2:CreateFleet |
| CreateLaunchTemplate | CreateLaunchTemplateAuthCheckFailed | ... ec2:CreateLaunchTemplate |
| RunInstances | RunInstancesAuthCheckFailed | ... ec2:RunInstances |

nodeflow adds what to do to the message (the policy `nodeflow iam-policy` prints). A verdict is kept per
node class and what the calls carry, an hour when the calls may be made and a minute when not, so a fixed
policy is seen within a minute and a node class that resolves the same is not checked at every
provisioning round. A throttled call, or an answer that is neither of the two (an instance profile EC2
does not see yet), is no verdict: the condition is Unknown, the node class stays ready (a real launch
will say), and the next resolution tries again. With `dry_run` off (Karpenter's `--disable-dry-run`) no
call is made and the condition is True.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from apis.ec2nodeclass import VALIDATION_SUCCEEDED, EC2NodeClass
from cloudprovider.aws.errors import call, has_code
from cloudprovider.aws.launch.launchtemplate import LaunchTemplateSpec, tag_list
from cloudprovider.aws.nodeclass.resolve import ami_family
from cloudprovider.aws.sdk import EC2API
from cloudprovider.errors import CloudProviderError, PartReadiness, ThrottledError
from cloudprovider.types import ResolvedNodeClass

log = logging.getLogger(__name__)
PASSED_TTL_SECONDS = 3600.0
FAILED_TTL_SECONDS = 60.0
# Karpenter's ValidationSucceeded while a part (subnets, security groups, AMIs, instance profile) fails.
AWAITING = ("False", "DependenciesNotReady", "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution")
REASONS = {
    "CreateFleet": "CreateFleetAuthCheckFailed",
    "CreateLaunchTemplate": "CreateLaunchTemplateAuthCheckFailed",
    "RunInstances": "RunInstancesAuthCheckFailed",
}
# Karpenter's stand-ins for CreateFleet's launch template and subnets: the check is of the caller's
# authorization, not of the resources.
MOCK_TEMPLATE = {"LaunchTemplateName": "mock-lt-name", "LaunchTemplateId": "lt-1234567890abcdef0", "Version": "1"}
MOCK_OVERRIDES = [
    {"InstanceType": "t3.micro", "SubnetId": "subnet-1234567890abcdef0"},
    {"InstanceType": "t3.small", "SubnetId": "subnet-1234567890abcdef1"},
]
DEFAULT_TYPES = {"arm64": "m6g.large"}  # else m5.large: a type of the AMI's architecture


@dataclass(frozen=True)
class DryRun:
    """One call with DryRun: its name and request."""

    operation: str
    request: dict[str, Any]


def dry_runs(
    node_class: EC2NodeClass, resolved: ResolvedNodeClass, user_data: str, tags: dict[str, str]
) -> list[DryRun]:
    """The three calls of a launch with this node class, as it resolved (module docstring)."""
    tagged = tag_list(tuple(tags.items()))
    fleet = {
        "Type": "instant",
        "LaunchTemplateConfigs": [{"LaunchTemplateSpecification": MOCK_TEMPLATE, "Overrides": MOCK_OVERRIDES}],
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"},
        "TagSpecifications": [{"ResourceType": r, "Tags": tagged} for r in ("instance", "volume", "fleet")],
        "DryRun": True,
    }
    ami = next((a for a in resolved.amis if not a.get("variant") or a.get("variant") == "standard"), resolved.amis[0])
    spec = LaunchTemplateSpec(
        image_id=ami["id"],
        user_data=user_data,
        security_group_ids=tuple(g["id"] for g in resolved.security_groups),
        instance_profile=resolved.instance_profile,
        node_class=node_class,
        family=ami_family(node_class),
        tags=tuple(tags.items()),
    )
    template = {**spec.create_request(), "DryRun": True}
    data = template["LaunchTemplateData"]
    subnet = resolved.subnets[0]["id"]
    run = {key: value for key, value in data.items() if key != "TagSpecifications"}
    if run.get("NetworkInterfaces"):
        run["NetworkInterfaces"] = [dict(run["NetworkInterfaces"][0], SubnetId=subnet), *run["NetworkInterfaces"][1:]]
    else:
        run["SubnetId"] = subnet
    run.update(
        InstanceType=DEFAULT_TYPES.get(ami.get("arch", ""), "m5.large"),
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            *data["TagSpecifications"],
            *({"ResourceType": r, "Tags": tagged} for r in ("instance", "volume")),
        ],
        DryRun=True,
    )
    return [DryRun("CreateFleet", fleet), DryRun("CreateLaunchTemplate", template), DryRun("RunInstances", run)]


def key_of(node_class_name: str, runs: Sequence[DryRun]) -> str:
    """What a verdict is kept under: the node class and everything its calls carry."""
    content = json.dumps([node_class_name, [(r.operation, r.request) for r in runs]], sort_keys=True, default=str)
    return hashlib.sha256(content.encode()).hexdigest()


class AuthorizationChecks:
    """Sends the dry runs and keeps their verdicts (see the module docstring). Thread-safe."""

    def __init__(self, ec2: EC2API, clock: Callable[[], float] = time.monotonic, dry_run: bool = True) -> None:
        self._ec2 = ec2
        self._clock = clock
        self._dry_run = dry_run
        self._verdicts: dict[str, tuple[float, PartReadiness]] = {}
        self._lock = threading.Lock()

    def check(self, node_class: EC2NodeClass, build: Callable[[], list[DryRun]]) -> PartReadiness:
        """ValidationSucceeded for the node class: True, False with Karpenter's reason, or Unknown (no
        verdict). `build` makes the calls' requests (dry_runs)."""
        if not self._dry_run:
            return ("True", VALIDATION_SUCCEEDED, "dry runs are turned off (disable_dry_run)")
        runs = build()
        key = key_of(node_class.name, runs)
        now = self._clock()
        with self._lock:
            kept = self._verdicts.get(key)
            if kept is not None and kept[0] > now:
                return kept[1]
        verdict, ttl = self._verdict(node_class, runs)
        if ttl:
            with self._lock:
                self._verdicts = {k: v for k, v in self._verdicts.items() if v[0] > now}
                self._verdicts[key] = (now + ttl, verdict)
        return verdict

    def _verdict(self, node_class: EC2NodeClass, runs: Sequence[DryRun]) -> tuple[PartReadiness, float]:
        """The verdict of the calls, and how long to keep it (0: not at all)."""
        methods = {
            "CreateFleet": self._ec2.create_fleet,
            "CreateLaunchTemplate": self._ec2.create_launch_template,
            "RunInstances": self._ec2.run_instances,
        }
        for run in runs:
            method = methods[run.operation]
            try:
                call(run.operation, method, **run.request)
            except ThrottledError as error:
                return ("Unknown", "DryRunThrottled", f"ec2:{run.operation} dry run throttled: {error}"), 0.0
            except CloudProviderError as error:
                if has_code(error, "DryRunOperation"):
                    continue
                if has_code(error, "UnauthorizedOperation", "AccessDenied*"):
                    message = (
                        f"Controller isn't authorized to call ec2:{run.operation}: EC2NodeClass {node_class.name}'s "
                        "launches would be refused; grant it (nodeflow iam-policy prints the policy) or check the "
                        "node class's tags against the policy's tag conditions"
                    )
                    return ("False", REASONS[run.operation], message), FAILED_TTL_SECONDS
                log.warning("EC2NodeClass %s: ec2:%s dry run answered %s", node_class.name, run.operation, error)
                return ("Unknown", "DryRunInconclusive", f"ec2:{run.operation} dry run: {error}"), 0.0
            else:  # a dry run never succeeds: an endpoint that ignored DryRun made the call
                log.warning("EC2NodeClass %s: ec2:%s ignored DryRun", node_class.name, run.operation)
        return ("True", VALIDATION_SUCCEEDED, ""), PASSED_TTL_SECONDS
