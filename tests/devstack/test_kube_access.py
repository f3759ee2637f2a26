"""The emulator with authentication and RBAC on, over real HTTPS, as the stack runs it: 401 without a
known bearer token, 403 worded as kube-apiserver words it, the chart's rules file granting the worker's
ServiceAccount (devstack.stack.identity), SelfSubjectAccessReview and SelfSubjectRulesReview through the
official client and through `kubectl auth can-i`, and the authorization log."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from devstack.kube import access, catalog, tls
from devstack.kube.kubeconfig import write_kubeconfig
from devstack.kube.server import KubeApiServer
from devstack.stack.identity import Identities, worker_objects
from kube.client import KubeClient
from kube.errors import ForbiddenError
from kube.resources import DEPLOYMENT, NODE, NODECLAIM, NODEPOOL
from tests.rbac_coverage import RULES_FILE

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
WORKER = "system:serviceaccount:nodeflow:nodeflow"


@pytest.fixture(scope="module")
def identities() -> Identities:
    return Identities.new("nodeflow", "nodeflow")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tls.TlsFiles:
    return tls.generate(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def authz_log(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("authz")


@pytest.fixture(scope="module")
def server(identities: Identities, pki: tls.TlsFiles, authz_log: pathlib.Path) -> Iterator[KubeApiServer]:
    tokens = identities.tokens
    with KubeApiServer(controllers=False, tokens=tokens, tls=(pki.cert_file, pki.key_file), authz_log=authz_log) as api:

        def grant() -> None:
            for doc in worker_objects(RULES_FILE, "nodeflow", "nodeflow"):
                res = next(r for r in catalog.SERVED if (r.api_version, r.kind) == (doc["apiVersion"], doc["kind"]))
                api.emulator.store.create(res, doc["metadata"].get("namespace"), doc)

        api.call(grant)
        yield api


@pytest.fixture(scope="module")
def kubeconfigs(
    server: KubeApiServer, identities: Identities, pki: tls.TlsFiles, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, pathlib.Path]:
    where = tmp_path_factory.mktemp("kubeconfigs")
    paths = {"admin": where / "admin", "worker": where / "worker"}
    write_kubeconfig(paths["admin"], server.url, token=identities.admin_token, ca_file=pki.ca_file)
    write_kubeconfig(paths["worker"], server.url, token=identities.worker_token, ca_file=pki.ca_file,
                     namespace="nodeflow")  # fmt: skip
    return paths


def http(server: KubeApiServer, pki: tls.TlsFiles, method: str, path: str, token: str | None,
         body: Any = None) -> tuple[int, Any]:  # fmt: skip
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            data = response.read()
            try:
                return response.status, json.loads(data)
            except ValueError:  # a watch stream: one JSON event a line
                return response.status, data
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_without_a_known_token_every_request_is_401_unauthorized(server: KubeApiServer, pki: tls.TlsFiles) -> None:
    for token in (None, "not-a-token"):
        code, body = http(server, pki, "GET", "/api/v1/nodes", token)
        assert (code, body["kind"], body["reason"], body["message"]) == (401, "Status", "Unauthorized", "Unauthorized")
    assert http(server, pki, "GET", "/version", None)[0] == 401


def test_the_worker_is_refused_what_the_rules_do_not_grant_with_kube_apiservers_status(
    server: KubeApiServer, pki: tls.TlsFiles, identities: Identities
) -> None:
    code, body = http(server, pki, "POST", "/api/v1/namespaces", identities.worker_token, {"metadata": {"name": "x"}})
    assert (code, body["reason"], body["details"]) == (403, "Forbidden", {"kind": "namespaces"})
    assert body["message"] == (
        f'namespaces is forbidden: User "{WORKER}" cannot create resource "namespaces" in API group "" at the '
        "cluster scope"
    )
    code, body = http(server, pki, "GET", "/api/v1/nodes?watch=true&timeoutSeconds=1", identities.worker_token)
    assert code == 200  # the chart's rules grant watch on nodes
    assert http(server, pki, "GET", "/api", identities.worker_token)[0] == 200  # discovery: system:discovery
    assert (
        http(server, pki, "POST", "/api/v1/namespaces", identities.admin_token, {"metadata": {"name": "y"}})[0] == 201
    )


def test_the_product_client_with_the_worker_kubeconfig_may_watch_nodes_and_not_delete_nodepools(
    server: KubeApiServer, kubeconfigs: dict[str, pathlib.Path]
) -> None:
    admin, worker = (KubeClient.from_kubeconfig(str(kubeconfigs[k])) for k in ("admin", "worker"))
    admin.create(NODEPOOL, {"metadata": {"name": "pool"}, "spec": {"template": {"spec": {}}}})
    admin.create(NODE, {"metadata": {"name": "n1"}})
    assert list(worker.watch(NODE, timeout_seconds=1))[:1] == [("ADDED", admin.get(NODE, "n1"))]
    with pytest.raises(
        ForbiddenError, match=re.escape('cannot delete resource "nodepools" in API group "karpenter.sh"')
    ):
        worker.delete(NODEPOOL, "pool")


def owner_ref(owner: dict[str, Any], block: bool) -> dict[str, Any]:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "blockOwnerDeletion": block}  # fmt: skip


def test_owner_references_need_delete_on_the_object_and_blocking_ones_the_owners_finalizers(
    server: KubeApiServer, kubeconfigs: dict[str, pathlib.Path]
) -> None:
    """OwnerReferencesPermissionEnforcement, as EKS's API server runs it: the worker may point its Node at
    its NodeClaim with blockOwnerDeletion (the chart grants nodeclaims/finalizers update and nodes delete), a
    reference that does not block needs no more, and a blocking one to an owner whose finalizers it may not
    update is refused, in the plugin's words."""
    admin, worker = (KubeClient.from_kubeconfig(str(kubeconfigs[k])) for k in ("admin", "worker"))
    claim = admin.create(NODECLAIM, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c1"},
                                     "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                               "name": "default"}, "requirements": []}})  # fmt: skip
    app = admin.create(DEPLOYMENT, {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "metadata": {"name": "app", "namespace": "default"},
                                    "spec": {"selector": {"matchLabels": {"app": "a"}},
                                             "template": {"metadata": {"labels": {"app": "a"}},
                                                          "spec": {"containers": [{"name": "a", "image": "x"}]}}}},
                       namespace="default")  # fmt: skip
    admin.create(NODE, {"metadata": {"name": "owned"}})
    refs = [owner_ref(claim, True)]
    worker.patch(NODE, "owned", {"metadata": {"ownerReferences": refs}})
    refs.append(owner_ref(app, False))
    worker.patch(NODE, "owned", {"metadata": {"ownerReferences": refs}})
    refs[1] = owner_ref(app, True)
    with pytest.raises(ForbiddenError) as refused:
        worker.patch(NODE, "owned", {"metadata": {"ownerReferences": refs}})
    message = str(refused.value)  # the client shortens long messages in the middle
    assert "403 Forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource" in message
    assert 'cannot update resource "deployments/finalizers" in API group "apps" at the cluster scope' in message
    assert [r["blockOwnerDeletion"] for r in admin.get(NODE, "owned")["metadata"]["ownerReferences"]] == [True, False]
    admin.close()
    worker.close()


def review(kubeconfig: pathlib.Path, spec: dict[str, Any], kind: str = "SelfSubjectAccessReview") -> Any:
    configuration = client.Configuration()
    config.load_kube_config(str(kubeconfig), client_configuration=configuration)
    authz = client.AuthorizationV1Api(client.ApiClient(configuration))
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}
    create = authz.create_self_subject_access_review if kind == "SelfSubjectAccessReview" else (
        authz.create_self_subject_rules_review
    )  # fmt: skip
    return create(body).status


@pytest.mark.parametrize(
    ("attributes", "allowed"),
    [
        ({"verb": "watch", "resource": "nodes"}, True),
        ({"verb": "watch", "group": "karpenter.k8s.aws", "resource": "ec2nodeclasses"}, True),
        ({"verb": "delete", "group": "karpenter.sh", "resource": "nodepools"}, False),
        ({"verb": "create", "resource": "namespaces"}, False),
        ({"verb": "create", "resource": "pods", "subresource": "eviction", "namespace": "default"}, True),
        ({"verb": "update", "group": "coordination.k8s.io", "resource": "leases", "namespace": "nodeflow"}, True),
        ({"verb": "update", "group": "coordination.k8s.io", "resource": "leases", "namespace": "default"}, False),
    ],
)
def test_self_subject_access_reviews_answer_for_the_requesting_user(
    kubeconfigs: dict[str, pathlib.Path], attributes: dict[str, str], allowed: bool
) -> None:
    assert review(kubeconfigs["worker"], {"resourceAttributes": attributes}).allowed is allowed
    assert review(kubeconfigs["admin"], {"resourceAttributes": attributes}).allowed is True


def test_a_self_subject_rules_review_lists_the_rules_bound_in_the_namespace(
    kubeconfigs: dict[str, pathlib.Path],
) -> None:
    status = review(kubeconfigs["worker"], {"namespace": "nodeflow"}, "SelfSubjectRulesReview")
    rules = {(tuple(r.api_groups), tuple(r.resources)): set(r.verbs) for r in status.resource_rules}
    assert rules[(("",), ("nodes",))] == {"get", "list", "watch", "patch", "delete"}
    assert rules[(("coordination.k8s.io",), ("leases",))] == {"get", "create", "update"}
    assert any("/api" in r.non_resource_urls for r in status.non_resource_rules)


def test_the_authorization_log_records_each_decision_of_a_non_admin_once(
    server: KubeApiServer, pki: tls.TlsFiles, identities: Identities, authz_log: pathlib.Path
) -> None:
    for _ in range(2):
        http(server, pki, "DELETE", "/apis/karpenter.sh/v1/nodepools/nothing", identities.worker_token)
    http(server, pki, "GET", "/apis/karpenter.sh/v1/nodepools", identities.admin_token)
    records = access.read_authz_log(authz_log)
    refused = {"user": WORKER, "verb": "delete", "group": "karpenter.sh", "resource": "nodepools",
               "namespace": None, "allowed": False}  # fmt: skip
    assert refused in records
    assert [r["user"] for r in records if r["user"] != WORKER] == []
    assert len(records) == len({json.dumps(r, sort_keys=True) for r in records})


@pytest.mark.skipif(not pathlib.Path(KUBECTL).exists(), reason="kubectl is not installed")
@pytest.mark.parametrize(
    ("args", "answer"),
    [
        (["watch", "nodes"], "yes"),
        (["delete", "nodepools.karpenter.sh"], "no"),
        (["create", "namespaces"], "no"),
        (["create", "pods", "--subresource=eviction", "-n", "default"], "yes"),
    ],
)
def test_kubectl_auth_can_i_with_the_worker_kubeconfig(
    kubeconfigs: dict[str, pathlib.Path], tmp_path: pathlib.Path, args: list[str], answer: str
) -> None:
    """kubectl posts its review as protobuf (devstack.kube.protobuf) and sends credentials over TLS only."""
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfigs["worker"]), "auth", "can-i", *args],
                          capture_output=True, text=True, timeout=20,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.stdout.strip() == answer, done.stderr
