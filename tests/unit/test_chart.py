"""The Helm chart (deploy/charts/nodeflow): it lints, renders with its default values and with every
value set (ci/full-values.yaml), every rendered manifest is valid against the Kubernetes API schemas,
its CRDs are the generated ones, and its ClusterRole and Role are the rules file's (rbac-rules.yaml; what
the worker's requests need is checked from the e2e runs, tests/rbac_coverage.py).

Rendering goes through Helm v4's SDK (helm-python-sdk), validation through kubernetes-validate (strict:
an unknown field fails), both offline."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from apis.manifests import load_documents, parse_api_object
from kube import resources as kube_resources
from scheduling.types import SchedulingPolicies
from tests.dashboard import DASHBOARD
from tests.rbac_coverage import load_rules
from workers.log_format import log_format
from workers.settings import Settings, env_name
from workers.tracing import tracing_from_env

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "charts" / "nodeflow"
FULL_VALUES = CHART / "ci" / "full-values.yaml"
KUBERNETES_VERSION = "1.30.0"
RELEASE, NAMESPACE = "nodeflow", "nodeflow"
# The values the chart requires (it fails without them, tests/unit/test_chart_values.py); "default values"
# below means these and values.yaml's.
REQUIRED_VALUES: dict[str, Any] = {
    "clusterName": "prod",
    "temporal": {"address": "temporal-frontend.temporal:7233"},
    "image": {"repository": "123456789012.dkr.ecr.us-west-2.amazonaws.com/nodeflow"},
}

Manifest = dict[str, Any]
Grant = tuple[str, str, str]  # (API group, resource or resource/subresource, verb)


@cache
def render(full: bool) -> tuple[Manifest, ...]:
    """The chart's manifests (templates only; Helm installs crds/ as they are), with the default values
    or with ci/full-values.yaml."""
    values = yaml.safe_load(FULL_VALUES.read_text()) if full else REQUIRED_VALUES
    files = helm_python.Chart.load(str(CHART)).render(values, name=RELEASE, namespace=NAMESPACE)
    texts = [text for path, text in files.items() if path.endswith(".yaml")]  # not NOTES.txt
    return tuple(doc for text in texts for doc in yaml.safe_load_all(text) if doc)


def one(docs: tuple[Manifest, ...], kind: str) -> Manifest:
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


def container(docs: tuple[Manifest, ...]) -> Manifest:
    [worker] = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return worker


def env(docs: tuple[Manifest, ...]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(docs)["env"]}


def grants(rules: list[Manifest]) -> set[Grant]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


# -- lint, render, validate ------------------------------------------------------------------------


def test_the_chart_lints_without_warnings() -> None:
    full: dict[str, Any] = yaml.safe_load(FULL_VALUES.read_text())
    for values in (REQUIRED_VALUES, full):
        result = helm_python.lint(str(CHART), values, strict=True)
        assert result["errors"] == []
        # Helm's severities: 1 info (e.g. "icon is recommended"), 2 warning, 4 error.
        assert [m for m in result["messages"] if m["severity"] > 1] == []


@pytest.mark.parametrize("full", [False, True], ids=["default-values", "full-values"])
def test_every_rendered_manifest_is_valid_kubernetes(full: bool) -> None:
    docs = render(full)
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        [
            *(["ConfigMap", "ServiceMonitor"] if full else []),  # the Grafana dashboard, the ServiceMonitor
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "PodDisruptionBudget",
            "Role",
            "RoleBinding",
            "Service",
            "ServiceAccount",
        ]
    )
    for doc in docs:
        if doc["kind"] != "ServiceMonitor":  # the Prometheus operator's: test_chart_values.py checks it
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["kind"]


def test_the_charts_crds_are_the_generated_ones() -> None:
    """deploy/crds is the source (`make crds`); the chart holds copies (`make chart-crds`)."""
    source = {p.name: p.read_text() for p in (ROOT / "deploy" / "crds").glob("*.yaml")}
    copies = {p.name: p.read_text() for p in (CHART / "crds").glob("*.yaml")}
    assert source, "deploy/crds holds no CRD"
    assert copies == source, "the chart's CRDs differ from deploy/crds: run `make chart-crds` and commit the result"


# -- RBAC: one rules file, checked against what the worker's requests needed --------------------------
#
# The rules live in rbac-rules.yaml, which the templates include and the local stack grants the worker's
# ServiceAccount (devstack.stack.identity): every e2e test runs the worker under them, a refused request
# fails the run and a grant no request needed fails a run of every e2e test (tests/rbac_coverage.py, from
# the emulator's authorization log). A scan of call sites missed the leader's reflector watches.


@pytest.mark.parametrize("full", [False, True], ids=["default-values", "full-values"])
def test_the_roles_rules_are_the_rules_files(full: bool) -> None:
    cluster_rules, lease_rules = load_rules(CHART / "rbac-rules.yaml")
    docs = render(full)
    assert one(docs, "ClusterRole")["rules"] == cluster_rules
    assert one(docs, "Role")["rules"] == lease_rules


def test_the_worker_never_changes_the_administrators_nodepools_and_ec2nodeclasses() -> None:
    """It writes their status, and the EC2NodeClass termination finalizer with a patch of it alone, as
    Karpenter's role allows; creating, updating or deleting them is the cluster administrator's."""
    granted = grants(one(render(False), "ClusterRole")["rules"])
    assert {v for g, r, v in granted if r == "nodepools"} <= {"get", "list", "watch"}
    assert {v for g, r, v in granted if r == "ec2nodeclasses"} <= {"get", "list", "watch", "patch"}
    writers = {
        p.name
        for p in (ROOT / "activities").rglob("*.py")
        for line in p.read_text().splitlines()
        if "patch(r.EC2NODECLASS" in line and 'subresource="status"' not in line
    }
    assert writers == {"nodeclass_termination.py"}
    termination = (ROOT / "activities" / "provisioning" / "nodeclass_termination.py").read_text()
    assert 'patch = {"metadata": {"finalizers": finalizers, "resourceVersion"' in termination


def test_the_leaders_reflectors_may_list_and_watch_what_they_reflect() -> None:
    granted = grants(one(render(False), "ClusterRole")["rules"])
    for resource in (kube_resources.NODE, kube_resources.EC2NODECLASS, kube_resources.NODEPOOL,
                     kube_resources.NODECLAIM, kube_resources.POD):  # fmt: skip
        assert {(resource.group, resource.plural, v) for v in ("list", "watch")} <= granted


def test_the_worker_may_write_what_it_owns() -> None:
    granted = grants(one(render(False), "ClusterRole")["rules"])
    assert {
        ("karpenter.sh", "nodeclaims", "create"),
        ("karpenter.sh", "nodeclaims/status", "patch"),
        ("karpenter.sh", "nodepools/status", "patch"),
        ("karpenter.k8s.aws", "ec2nodeclasses/status", "patch"),
        ("", "pods/eviction", "create"),
        ("", "nodes", "patch"),
        ("", "nodes", "delete"),
        ("", "events", "create"),
    } <= granted


def test_leader_election_has_a_lease_role_in_the_release_namespace_only() -> None:
    docs = render(False)
    role, binding = one(docs, "Role"), one(docs, "RoleBinding")
    assert grants(role["rules"]) == {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
    assert role["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    sa = one(docs, "ServiceAccount")["metadata"]
    for b in (binding, one(docs, "ClusterRoleBinding")):
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": NAMESPACE}]


# -- the worker Deployment -------------------------------------------------------------------------


@pytest.mark.parametrize("full", [False, True], ids=["default-values", "full-values"])
def test_the_worker_runs_locked_down(full: bool) -> None:
    docs = render(full)
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    ctx = container(docs)["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65532
    assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == 65532
    assert ctx["readOnlyRootFilesystem"] is True and ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


@pytest.mark.parametrize(("full", "port"), [(False, 8081), (True, 9081)], ids=["default-values", "full-values"])
def test_the_probes_hit_the_health_endpoints_on_the_health_probe_port(full: bool, port: int) -> None:
    docs = render(full)
    worker = container(docs)
    assert worker["ports"][0] == {"name": "health", "containerPort": port, "protocol": "TCP"}
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert worker["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert env(docs)["NODEFLOW_HEALTH_PROBE_PORT"] == str(port)


@pytest.mark.parametrize(
    ("full", "metrics", "temporal"), [(False, 8080, 8082), (True, 9080, 9082)], ids=["default-values", "full-values"]
)
def test_both_metrics_ports_are_the_workers_settings_and_the_services_ports(
    full: bool, metrics: int, temporal: int
) -> None:
    docs = render(full)
    assert container(docs)["ports"][1:] == [
        {"name": "http-metrics", "containerPort": metrics, "protocol": "TCP"},
        {"name": "temporal-metrics", "containerPort": temporal, "protocol": "TCP"},
    ]
    assert (env(docs)["NODEFLOW_METRICS_PORT"], env(docs)["NODEFLOW_TEMPORAL_METRICS_PORT"]) == (
        str(metrics),
        str(temporal),
    )
    service = one(docs, "Service")["spec"]
    assert service["selector"] == one(docs, "Deployment")["spec"]["selector"]["matchLabels"]
    assert service["ports"] == [
        {"name": "http-metrics", "port": metrics, "targetPort": "http-metrics", "protocol": "TCP"},
        {"name": "temporal-metrics", "port": temporal, "targetPort": "temporal-metrics", "protocol": "TCP"},
    ]


def test_metrics_ports_of_0_turn_the_endpoints_and_the_service_off() -> None:
    values = {**REQUIRED_VALUES, "metricsPort": 0, "temporalMetricsPort": 0}
    files = helm_python.Chart.load(str(CHART)).render(values, name=RELEASE, namespace=NAMESPACE)
    docs = [doc for path, text in files.items() if path.endswith(".yaml") for doc in yaml.safe_load_all(text) if doc]
    assert "Service" not in {d["kind"] for d in docs}
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    [worker] = deployment["spec"]["template"]["spec"]["containers"]
    assert [p["name"] for p in worker["ports"]] == ["health"]
    assert {e["name"]: e.get("value") for e in worker["env"]}["NODEFLOW_METRICS_PORT"] == "0"


def test_the_dashboard_ships_as_a_grafana_sidecar_config_map_when_enabled() -> None:
    assert "ConfigMap" not in {d["kind"] for d in render(False)}
    config_map = one(render(True), "ConfigMap")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "Autoscaling"}
    assert json.loads(config_map["data"]["nodeflow.json"]) == json.loads(DASHBOARD.read_text())
    values = {**REQUIRED_VALUES, "dashboards": {"enabled": True, "namespace": "monitoring"}}
    files = helm_python.Chart.load(str(CHART)).render(values, name=RELEASE, namespace=NAMESPACE)
    docs = [doc for path, text in files.items() if path.endswith(".yaml") for doc in yaml.safe_load_all(text) if doc]
    [elsewhere] = [d for d in docs if d["kind"] == "ConfigMap"]
    assert elsewhere["metadata"]["namespace"] == "monitoring" and "annotations" not in elsewhere["metadata"]


def test_two_replicas_spread_over_zones_and_hosts_with_a_disruption_budget() -> None:
    docs = render(False)
    deployment, pdb = one(docs, "Deployment"), one(docs, "PodDisruptionBudget")
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["replicas"] == 2
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {s["topologyKey"] for s in spread} == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    assert all(s["labelSelector"] == {"matchLabels": selector} for s in spread)
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize(
    ("full", "mib"), [(False, 256 + 206), (True, 256 + 684)], ids=["default-values", "full-values"]
)
def test_memory_is_sized_from_the_cached_workflows_and_the_cluster_pods(full: bool, mib: int) -> None:
    """baseMemoryMiB + ceil((maxCachedWorkflows x 100 KiB + clusterPods x 10 KiB) / 1024), as request and
    limit (values.yaml): 2,000 slots and 1,000 pods by default, 5,000 and 20,000 in ci/full-values.yaml."""
    resources = container(render(full))["resources"]
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == f"{mib}Mi"


def test_default_values_render_only_the_settings_they_set() -> None:
    assert env(render(False)) == {
        "NODEFLOW_CLUSTER_NAME": "prod",  # required
        "NODEFLOW_TEMPORAL_ADDRESS": "temporal-frontend.temporal:7233",  # required
        "NODEFLOW_TEMPORAL_NAMESPACE": "default",
        "NODEFLOW_TASK_QUEUE": "nodeflow",
        "NODEFLOW_MAX_CACHED_WORKFLOWS": "2000",
        "NODEFLOW_HEALTH_PROBE_PORT": "8081",
        "NODEFLOW_METRICS_PORT": "8080",
        "NODEFLOW_TEMPORAL_METRICS_PORT": "8082",
        "POD_NAMESPACE": {"fieldRef": {"fieldPath": "metadata.namespace"}},  # where the Lease and its Role are
    }
    worker = container(render(False))
    assert worker["args"] == ["--log-level", "INFO"]
    assert [m["name"] for m in worker["volumeMounts"]] == ["tmp"]


def test_an_unknown_feature_gate_fails_the_render_naming_the_key() -> None:
    with pytest.raises(Exception, match=r"featureGates.spotToSpot: unknown feature gate; the gates are NodeRepair"):
        helm_python.Chart.load(str(CHART)).render(
            {**REQUIRED_VALUES, "featureGates": {"spotToSpot": True}}, name=RELEASE, namespace=NAMESPACE
        )


def test_karpenters_settings_block_is_accepted() -> None:
    """What nodeflow does not act on fails instead (tests/unit/test_chart_values.py)."""
    karpenter_values = {
        **REQUIRED_VALUES,
        "settings": {
            "clusterName": "prod",
            "clusterEndpoint": "https://prod.eks.amazonaws.com",
            "interruptionQueue": "prod-interruptions",
            "featureGates": {"spotToSpotConsolidation": True},
            "batchMaxDuration": "20s",
            "vmMemoryOverheadPercent": 0,
            "reservedENIs": "1",
            "preferencePolicy": "Ignore",
            "minValuesPolicy": "BestEffort",
            "disableDryRun": True,
            "isolatedVPC": False,  # Karpenter's default: nodeflow does the same
        },
        "clusterName": "ignored-for-settings",
        "featureGates": {"nodeRepair": False},
    }
    files = helm_python.Chart.load(str(CHART)).render(karpenter_values, name=RELEASE, namespace=NAMESPACE)
    docs = tuple(d for p, t in files.items() if p.endswith(".yaml") for d in yaml.safe_load_all(t) if d)
    values = env(docs)
    assert values["NODEFLOW_CLUSTER_NAME"] == "prod"
    assert values["NODEFLOW_CLUSTER_ENDPOINT"] == "https://prod.eks.amazonaws.com"
    assert values["NODEFLOW_INTERRUPTION_QUEUE"] == "prod-interruptions"
    assert values["NODEFLOW_FEATURE_GATES"] == "NodeRepair=false,SpotToSpotConsolidation=true"
    assert values["NODEFLOW_BATCH_MAX_DURATION"] == "20s"
    assert values["NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT"] == "0", "0 is a value, not an unset one"
    assert values["NODEFLOW_RESERVED_ENIS"] == "1"
    assert (values["NODEFLOW_PREFERENCE_POLICY"], values["NODEFLOW_MIN_VALUES_POLICY"]) == ("Ignore", "BestEffort")
    known = {env_name(name): name for name in Settings.model_fields}
    worker = Settings(**{known[k]: v for k, v in values.items() if k in known})
    assert worker.scheduling_policies() == SchedulingPolicies("Ignore", "BestEffort")
    assert values["NODEFLOW_DISABLE_DRY_RUN"] == "true" and worker.disable_dry_run
    assert (worker.vm_memory_overhead_percent, worker.reserved_enis) == (0.0, 1)


def test_full_values_reach_the_worker_as_its_settings() -> None:
    docs = render(True)
    values = env(docs)
    assert values["NODEFLOW_CLUSTER_NAME"] == "prod"
    assert values["NODEFLOW_TEMPORAL_ADDRESS"] == "prod.a1b2c.tmprl.cloud:7233"
    assert values["NODEFLOW_TEMPORAL_TLS"] == "true"
    assert values["NODEFLOW_TEMPORAL_TLS_CA_FILE"] == "/etc/nodeflow/temporal-tls/ca.crt"
    assert values["NODEFLOW_TEMPORAL_TLS_CERT_FILE"] == "/etc/nodeflow/temporal-tls/tls.crt"
    assert values["NODEFLOW_TEMPORAL_TLS_KEY_FILE"] == "/etc/nodeflow/temporal-tls/tls.key"
    assert values["NODEFLOW_TEMPORAL_TLS_SERVER_NAME"] == "prod.a1b2c.tmprl.cloud"
    assert values["NODEFLOW_TEMPORAL_API_KEY"] == {"secretKeyRef": {"name": "temporal-api-key", "key": "api-key"}}
    assert values["NODEFLOW_FEATURE_GATES"] == "NodeRepair=false,SpotToSpotConsolidation=true"
    assert values["NODEFLOW_DISRUPTION_METHODS"] == "Drift,Emptiness,MultiNodeConsolidation,SingleNodeConsolidation"
    assert values["NODEFLOW_REGISTRATION_TTL"] == "20m"  # extraEnv
    assert values["NODEFLOW_LOG_FORMAT"] == "json"
    otel = {k: v for k, v in values.items() if k.startswith("OTEL_")}
    assert otel == {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4318",
        "OTEL_SERVICE_NAME": "nodeflow-prod",
        "OTEL_RESOURCE_ATTRIBUTES": "k8s.cluster.name=prod",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.1",
    }
    tracing = tracing_from_env(otel)  # values the worker accepts
    assert tracing is not None
    tracing.shutdown()
    assert log_format(values["NODEFLOW_LOG_FORMAT"], {}) == "json"
    # Every value rendered for a setting the worker already has is one it accepts.
    known = {env_name(name): name for name in Settings.model_fields}
    settings = {known[k]: v for k, v in values.items() if k in known and isinstance(v, str)}  # not a secretKeyRef
    assert Settings(**settings).task_queue == "nodeflow-prod"
    mounts = {m["name"]: m for m in container(docs)["volumeMounts"]}
    assert mounts["temporal-tls"] == {
        "name": "temporal-tls",
        "mountPath": "/etc/nodeflow/temporal-tls",
        "readOnly": True,
    }
    sa = one(docs, "ServiceAccount")["metadata"]["annotations"]
    assert sa["eks.amazonaws.com/role-arn"] == "arn:aws:iam::123456789012:role/nodeflow-prod"


# -- the install steps (docs/install-eks.md) --------------------------------------------------------


def test_the_docs_install_sets_only_values_the_chart_has() -> None:
    """The install steps (docs/install-eks.md) and the chart values the tracing and log sections set
    (docs/metrics.md) name only keys values.yaml has."""
    section = "\n".join((ROOT / "docs" / page).read_text() for page in ("install-eks.md", "metrics.md"))
    keys = set(re.findall(r"--set ([\w.]+)=", section))
    assert {"clusterName", "temporal.address", "image.repository"} <= keys
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for key in keys:
        node = values
        for part in key.split("."):
            assert isinstance(node, dict) and part in node, f"docs/ sets {key}, which values.yaml does not have"
            node = node[part]
    assert "helm upgrade --install nodeflow deploy/charts/nodeflow --namespace nodeflow --create-namespace" in section
    assert "nodeflow iam-policy" in section


def test_the_readme_nodepool_and_ec2nodeclass_are_valid() -> None:
    text = (ROOT / "examples" / "eks-default-nodepool.yaml").read_text()
    objects = [parse_api_object(d) for d in load_documents(text, {"CLUSTER_NAME": "prod"})]
    assert sorted(type(o).__name__ for o in objects) == ["EC2NodeClass", "NodePool"]
