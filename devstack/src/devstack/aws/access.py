"""moto enforces the worker's IAM policy, by action: two IAM users and moto's access control switched on.

In the moto server's process, after seeding (`enforce`):

- `devstack-admin`, whose access key is `ADMIN_KEY` ("testing"/"testing", the fake credentials the stack's
  own clients, the simulated kubelet and the tests sign with), may do everything (an inline `*` policy);
- `nodeflow-controller`, the worker's principal, has one inline policy: `projection(policy)` of the policy
  the product's composition root gives (`nodeflow iam-policy` for the stack's account, region and cluster).
  Its access key is generated (or kept across `reset`) and reported in the moto service's ready file.

Then `moto.settings.INITIAL_NO_AUTH_ACTION_COUNT = 0`: every request moto answers is signed with a known key
(SigV4 checked) and allowed only by its user's policies (moto.iam.access_control). moto checks a statement
by action and Resource only, and most of its services (EC2 among them) authorize every request on
resource "*", while its Condition evaluation knows few keys and refuses requests real IAM allows. So the
controller's policy is projected: each statement's actions, Resource "*" and no Condition. A call the
policy does not grant at all is refused as AWS refuses it (EC2: 403 UnauthorizedOperation, "You are not
authorized to perform this operation. User: ... is not authorized to perform: ec2:X ..."; the other
services: 403 AccessDenied), which is what this catches; the resources and conditions of each statement
(tags, region, PassRole's service) are checked by the product's table-driven evaluation test
(tests/unit/cloudprovider/test_iam_policy_evaluation.py).

moto recomputes each request's SigV4 signature over its parsed parameters when the body is empty, which
differs from what the client signed for a GET of a REST service (EKS DescribeCluster: SignatureDoesNotMatch):
`enforce` makes it hash an empty payload for a GET, HEAD or DELETE without a body, as the client did.

Not behind this check: what moto does not answer itself (the Pricing API front, devstack.aws.pricing, and
the fault endpoint). The response cache (devstack.aws.response_cache) serves its stored DescribeInstanceTypes
answers only to requests `permits` allows, and hands the others to moto, which refuses them.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Mapping
from typing import Any

ADMIN_USER = "devstack-admin"
CONTROLLER_USER = "nodeflow-controller"
ADMIN_KEY = ("testing", "testing")
ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def projection(policy: Mapping[str, Any]) -> dict[str, Any]:
    """`policy` as moto can enforce it: each statement's effect and actions (Action or NotAction), on
    Resource "*", without Condition (module docstring)."""
    statements = policy["Statement"]
    statements = [statements] if isinstance(statements, Mapping) else statements
    projected = []
    for s in statements:
        actions = {k: s[k] for k in ("Action", "NotAction") if k in s}
        projected.append(
            {**({"Sid": s["Sid"]} if "Sid" in s else {}), "Effect": s["Effect"], **actions, "Resource": "*"}
        )
    return {"Version": "2012-10-17", "Statement": projected}


def new_key() -> tuple[str, str]:
    """A fresh (access key id, secret): AWS's shapes (20 upper-case letters and digits from AKIA, 40 characters)."""
    alphabet = string.ascii_uppercase + string.digits
    key_id = "AKIA" + "".join(secrets.choice(alphabet) for _ in range(16))
    return key_id, "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))


def _user(iam: Any, name: str, policy: Mapping[str, Any], key: tuple[str, str]) -> None:
    """Create IAM user `name` with the inline `policy` and an access key that is `key` (moto generates one;
    it is given `key`'s id and secret in place, and re-indexed under the new id)."""
    iam.create_user("us-east-1", name)
    iam.put_user_policy(name, "policy", json.dumps(policy))
    access_key = iam.create_access_key(name)
    iam.access_keys.pop(access_key.access_key_id, None)
    access_key.access_key_id, access_key.secret_access_key = key
    iam.access_keys[access_key.access_key_id] = access_key


def _sign_the_body_as_received() -> None:
    """moto's signature check over an empty payload for a bodiless GET, HEAD or DELETE (module docstring)."""
    from botocore.awsrequest import AWSRequest
    from moto.iam.access_control import IAMRequestBase

    if getattr(IAMRequestBase, "_devstack_raw_body", False):
        return

    def create_aws_request(self: Any) -> AWSRequest:
        request = original(self)
        if not self._body and str(self._method).upper() in ("GET", "HEAD", "DELETE"):
            request.data = b""
        return request

    original = IAMRequestBase._create_aws_request
    IAMRequestBase._create_aws_request = create_aws_request  # type: ignore[method-assign]
    IAMRequestBase._devstack_raw_body = True  # type: ignore[attr-defined]


def _refuse_ec2_as_ec2_does() -> None:
    """moto refuses every service's unauthorized call with AccessDenied; EC2 answers UnauthorizedOperation
    (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html), the code a client such as
    the product's launch-permission check must meet."""
    from moto.core.exceptions import _RESTError
    from moto.iam.access_control import IAMRequest

    if getattr(IAMRequest, "_devstack_ec2_refusal", False):
        return

    class UnauthorizedOperation(_RESTError):
        code = 403

        def __init__(self, user_arn: str, action: str) -> None:
            super().__init__(
                "UnauthorizedOperation",
                f"You are not authorized to perform this operation. User: {user_arn} is not authorized to "
                f"perform: {action} because no identity-based policy allows the {action} action",
            )

    def raise_access_denied(self: Any) -> None:
        if self._service == "ec2":
            raise UnauthorizedOperation(self._access_key.arn, self._action)
        original(self)

    original = IAMRequest._raise_access_denied
    IAMRequest._raise_access_denied = raise_access_denied  # type: ignore[method-assign]
    IAMRequest._devstack_ec2_refusal = True  # type: ignore[attr-defined]


def enforce(policy: Mapping[str, Any], account_id: str, controller_key: tuple[str, str]) -> None:
    """Create the admin and controller users in `account_id` (aws partition) and switch moto's access
    control on (module docstring). Call after seeding; `suspend` before wiping and seeding again."""
    from moto import settings
    from moto.iam.models import iam_backends

    _sign_the_body_as_received()
    _refuse_ec2_as_ec2_does()
    iam = iam_backends[account_id]["aws"]
    _user(iam, ADMIN_USER, ALLOW_ALL, ADMIN_KEY)
    _user(iam, CONTROLLER_USER, projection(policy), controller_key)
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0


def permits(environ: Mapping[str, Any], action: str) -> bool:
    """Whether moto's access control, as it stands, allows the SigV4-signed WSGI request `environ` to call
    `action` ("service:Action"): always while it is off; otherwise only for a known access key whose user's
    policies allow the action (no explicit deny). The signature itself is moto's to check."""
    from moto import settings
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.access_control import CreateAccessKeyFailure, IAMPolicy, IAMUserAccessKey, PermissionResult

    if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
        return True
    scope = str(environ.get("HTTP_AUTHORIZATION", "")).split("Credential=", 1)[-1].split(",", 1)[0].split("/")
    if len(scope) < 5:
        return False
    try:
        user = IAMUserAccessKey(DEFAULT_ACCOUNT_ID, "aws", scope[0], {})
    except CreateAccessKeyFailure:
        return False
    results = [IAMPolicy(policy).is_action_permitted(action) for policy in user.collect_policies()]
    return PermissionResult.DENIED not in results and PermissionResult.PERMITTED in results


def suspend() -> None:
    """Switch moto's access control off (moto's default: every request is answered)."""
    from moto import settings

    settings.INITIAL_NO_AUTH_ACTION_COUNT = float("inf")
