"""The chart's values are strict (deploy/charts/nodeflow, `nodeflow.validateValues` in templates/_helpers.tpl):
the required values, Karpenter's chart values that nodeflow does not act on and unknown keys fail the render
naming the key; what nodeflow does take of Karpenter's works as Karpenter's chart has it (the affinity and
topology spread selectors, settings.clusterCABundle, the ServiceMonitor, ...)."""

from __future__ import annotations

import copy
import re
from typing import Any

import helm_python
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from tests.unit.test_chart import CHART, KUBERNETES_VERSION, NAMESPACE, RELEASE, REQUIRED_VALUES, Manifest
from workers.settings import Settings

# Karpenter's chart values at v1.x, key by key as its values.yaml documents them
# (https://github.com/aws/karpenter-provider-aws/blob/main/charts/karpenter/values.yaml; v1.0 also had
# `postInstallHook` and `webhook`, covered below): each top-level key with its documented default,
# settings.clusterName set as a Karpenter user sets it.
KARPENTER_VALUES: dict[str, Any] = {
    "nameOverride": "",
    "fullnameOverride": "",
    "additionalLabels": {},
    "additionalAnnotations": {},
    "imagePullPolicy": "IfNotPresent",
    "imagePullSecrets": [],
    "service": {"annotations": {}},
    "serviceAccount": {"create": True, "name": "", "annotations": {}},
    "additionalClusterRoleRules": [],
    "serviceMonitor": {
        "enabled": False,
        "additionalLabels": {},
        "relabelings": [],
        "metricRelabelings": [],
        "endpointConfig": {},
        "sampleLimit": None,
    },
    "replicas": 2,
    "revisionHistoryLimit": 10,
    "strategy": {"rollingUpdate": {"maxUnavailable": 1}},
    "podLabels": {},
    "podAnnotations": {},
    "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
    "podSecurityContext": {"fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
    "priorityClassName": "system-cluster-critical",
    "terminationGracePeriodSeconds": None,
    "hostNetwork": False,
    "schedulerName": "default-scheduler",
    "dnsPolicy": "ClusterFirst",
    "dnsConfig": {},
    "initContainers": {},
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]}
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
        },
    },
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
    ],
    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    "extraVolumes": [],
    "controller": {
        "containerName": "controller",
        "image": {"repository": "public.ecr.aws/karpenter/controller", "tag": "1.14.1", "digest": ""},
        "env": [],
        "envFrom": [],
        "securityContext": {"appArmorProfile": {}, "seLinuxOptions": {}, "seccompProfile": {}},
        "resources": {},
        "extraVolumeMounts": [],
        "sidecarContainer": [],
        "sidecarVolumeMounts": [],
        "metrics": {"port": 8080},
        "healthProbe": {"port": 8081},
    },
    "logLevel": "info",
    "logOutputPaths": ["stdout"],
    "logErrorOutputPaths": ["stderr"],
    "settings": {
        "batchMaxDuration": "10s",
        "batchIdleDuration": "1s",
        "preferencePolicy": "Respect",
        "minValuesPolicy": "Strict",
        "clusterCABundle": "",
        "clusterName": "prod",
        "clusterEndpoint": "",
        "isolatedVPC": False,
        "eksControlPlane": False,
        "vmMemoryOverheadPercent": 0.075,
        "interruptionQueue": "",
        "enableZonalShift": False,
        "reservedENIs": "0",
        "ignoreDRARequests": True,
        "disableClusterStateObservability": False,
        "disableDryRun": False,
        "amiRefreshInterval": "1m",
        "subnetRefreshInterval": "1m",
        "featureGates": {
            "nodeRepair": False,
            "nodeOverlay": False,
            "reservedCapacity": True,
            "spotToSpotConsolidation": False,
            "staticCapacity": False,
            "capacityBuffer": False,
        },
        "awsFeatureGates": {"nodeClassCEL": False},
    },
}
# What such a file needs to render with nodeflow: Karpenter's keys nodeflow has no use for at these values
# taken out, and nodeflow's required values added.
NOT_TAKEN = ("controller", "logOutputPaths")
NODEFLOWS = {"temporal": REQUIRED_VALUES["temporal"], "image": REQUIRED_VALUES["image"]}


def render(values: dict[str, Any]) -> tuple[Manifest, ...]:
    files = helm_python.Chart.load(str(CHART)).render(values, name=RELEASE, namespace=NAMESPACE)
    return tuple(d for p, t in files.items() if p.endswith(".yaml") for d in yaml.safe_load_all(t) if d)


def failure(values: dict[str, Any]) -> list[str]:
    """The lines of the render's failure, one per value the chart does not take."""
    with pytest.raises(helm_python.HelmRenderError) as raised:
        render(values)
    message = str(raised.value)
    assert "nodeflow's chart cannot take these values (values.yaml describes every value it takes):" in message
    return [line.strip() for line in message.splitlines()[1:]]


def with_value(path: str, value: Any, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """`values` (REQUIRED_VALUES by default) with `value` at the dotted `path`."""
    result = copy.deepcopy(REQUIRED_VALUES if values is None else values)
    *parents, last = path.split(".")
    node = result
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return result


def one(docs: tuple[Manifest, ...], kind: str) -> Manifest:
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


def env(docs: tuple[Manifest, ...]) -> dict[str, Any]:
    [worker] = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in worker["env"]}


# -- Karpenter's values file -----------------------------------------------------------------------


def test_karpenters_own_values_file_fails_naming_each_key_nodeflow_does_not_take() -> None:
    lines = failure(KARPENTER_VALUES)
    assert lines[0] == (
        "controller.containerName: Karpenter's chart value, which nodeflow does not take; nodeflow has no "
        "equivalent: the container is named worker"
    )
    assert lines[1] == (
        "controller.image: Karpenter's chart value, which nodeflow does not take; nodeflow's equivalent: "
        "image.repository, image.tag and image.digest (nodeflow's worker image, not Karpenter's controller)"
    )
    assert lines[2].startswith("logOutputPaths: Karpenter's chart value, which nodeflow does not take; nodeflow has no")
    # then nodeflow's required values a Karpenter file does not have (its settings.clusterName does)
    assert [line.split(" ", 1)[0] for line in lines[3:]] == ["temporal.address", "image.repository"]


def test_karpenters_values_file_renders_once_what_nodeflow_does_not_take_is_out() -> None:
    """Every other key of it is nodeflow's too and works as in Karpenter's chart; the manifests are valid."""
    values = {k: v for k, v in KARPENTER_VALUES.items() if k not in NOT_TAKEN} | NODEFLOWS
    docs = render(values)
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    deployment = one(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert (pod["schedulerName"], pod["dnsPolicy"]) == ("default-scheduler", "ClusterFirst")
    assert "terminationGracePeriodSeconds" not in pod  # null: Kubernetes' default, as Karpenter's chart
    assert pod["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    assert deployment["spec"]["revisionHistoryLimit"] == 10
    assert one(docs, "PodDisruptionBudget")["metadata"]["name"] == "karpenter"
    assert env(docs)["NODEFLOW_CLUSTER_NAME"] == "prod"
    assert "NODEFLOW_CLUSTER_CA_BUNDLE" not in env(docs)  # "": read from eks:DescribeCluster


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ("additionalLabels", {"team": "platform"}, "nodeflow has no equivalent: the chart labels no object but"),
        ("additionalAnnotations", {"a": "b"}, "nodeflow has no equivalent: the chart annotates no object but"),
        ("additionalClusterRoleRules", [{"apiGroups": [""]}], "bind a ClusterRole of your own to the ServiceAccount"),
        ("imagePullPolicy", "Always", "nodeflow's equivalent: image.pullPolicy"),
        (
            "podSecurityContext",
            {"runAsUser": 0},
            "nodeflow has no equivalent: the chart sets the pod's securityContext",
        ),
        ("hostNetwork", True, "nodeflow has no equivalent: the pod runs on the pod network"),
        ("initContainers", [{"name": "x"}], "nodeflow has no equivalent: the pod runs the worker container only"),
        ("extraVolumes", [{"name": "x"}], "nodeflow has no equivalent: the worker mounts only /tmp"),
        ("controller.env", [{"name": "A", "value": "1"}], "nodeflow's equivalent: extraEnv"),
        ("controller.envFrom", [{"secretRef": {"name": "s"}}], "nodeflow's equivalent: extraEnv, one variable each"),
        ("controller.resources", {"requests": {"cpu": 1}}, "nodeflow's equivalent: resources.cpu, resources.cpuLimit"),
        ("controller.metrics.port", 8000, "nodeflow's equivalent: metricsPort"),
        ("controller.healthProbe.port", 9000, "nodeflow's equivalent: healthProbePort"),
        ("controller.sidecarContainer", [{"name": "x"}], "nodeflow has no equivalent: the pod runs the worker"),
        ("logConfig", {"enabled": True}, "nodeflow's equivalent: logLevel and logFormat"),
        ("logErrorOutputPaths", ["stdout"], "nodeflow has no equivalent: the worker writes every log line to standard"),
        ("webhook", {"enabled": True, "port": 8443}, "nodeflow has no equivalent: nodeflow serves no webhook"),
        ("postInstallHook", {"image": {"repository": "kubectl"}}, "nodeflow has no equivalent: the chart runs no hook"),
        (
            "settings.isolatedVPC",
            True,
            "nodeflow's equivalent: extraEnv NODEFLOW_ON_DEMAND_PRICE_REFRESH_INTERVAL=Never",
        ),
        ("settings.enableZonalShift", True, "nodeflow has no equivalent: nodeflow does not follow EKS zonal shifts"),
        ("settings.ignoreDRARequests", False, "nodeflow has no equivalent: nodeflow's scheduler does not read DRA"),
        ("settings.disableClusterStateObservability", True, "nodeflow has no equivalent: the worker always publishes"),
        ("settings.amiRefreshInterval", "5m", "nodeflow has no equivalent: nodeflow reads an EC2NodeClass's AMIs"),
        ("settings.subnetRefreshInterval", "5m", "nodeflow reads an EC2NodeClass's subnets at most once a minute"),
        ("settings.awsFeatureGates", {"nodeClassCEL": True}, "nodeflow has no equivalent: nodeflow has no AWS feature"),
    ],
)
def test_a_karpenter_value_nodeflow_does_not_act_on_fails_naming_it_and_the_equivalent(
    path: str, value: Any, says: str
) -> None:
    [line] = failure(with_value(path, value))
    assert line.startswith(f"{path}: Karpenter's chart value, which nodeflow does not take; ")
    assert says in line


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("hostNetwork", False),
        ("extraVolumes", []),
        ("initContainers", {}),
        ("additionalLabels", {}),
        ("imagePullPolicy", "IfNotPresent"),  # image.pullPolicy's default
        ("podSecurityContext", {"fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}),
        ("controller.metrics.port", 8080),  # metricsPort's default
        ("controller.healthProbe.port", 8081),  # healthProbePort's default
        ("controller.securityContext", {"seccompProfile": {}}),
        ("controller.containerName", "worker"),
        ("logErrorOutputPaths", ["stderr"]),
        ("settings.isolatedVPC", False),
        ("settings.eksControlPlane", True),
        ("settings.eksControlPlane", False),
        ("settings.ignoreDRARequests", True),
        ("settings.amiRefreshInterval", "1m"),
        ("settings.awsFeatureGates", {"nodeClassCEL": False}),
    ],
)
def test_a_karpenter_value_asking_for_what_nodeflow_does_anyway_is_accepted(path: str, value: Any) -> None:
    assert one(render(with_value(path, value)), "Deployment")


# -- required values and typos ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("clusterName", "clusterName is required: the EKS cluster nodeflow launches nodes for (--set clusterName="),
        ("temporal.address", "temporal.address is required: host:port of the Temporal frontend"),
        ("image.repository", "image.repository is required: the nodeflow worker image's repository (--set image."),
    ],
)
def test_rendering_without_a_required_value_fails_naming_it(path: str, says: str) -> None:
    """No silent default: the worker's own (nodeflow-dev, 127.0.0.1:7233) is never what an install wants."""
    [line] = failure(with_value(path, ""))
    assert line.startswith(says)
    assert failure(with_value(path, None)) == [line]


def test_karpenters_settings_cluster_name_is_the_cluster_name() -> None:
    values = with_value("settings.clusterName", "blue", with_value("clusterName", ""))
    assert env(render(values))["NODEFLOW_CLUSTER_NAME"] == "blue"


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (
            "tolerration",
            "tolerration: not a value of nodeflow's chart (nor of Karpenter's); values.yaml lists nodeflow's",
        ),
        (
            "temporal.adress",
            "temporal.adress: not a value of nodeflow's chart (nor of Karpenter's); temporal takes address,",
        ),
        (
            "temporal.tls.ca",
            "temporal.tls.ca: not a value of nodeflow's chart (nor of Karpenter's); temporal.tls takes",
        ),
        (
            "settings.clusterNmae",
            "settings.clusterNmae: not a value of nodeflow's chart (nor of Karpenter's); settings",
        ),
        (
            "serviceMonitor.labels",
            "serviceMonitor.labels: not a value of nodeflow's chart (nor of Karpenter's); service",
        ),
        ("controller.imag", "controller.imag: not a value of nodeflow's chart (nor of Karpenter's); values.yaml lists"),
        ("topologySpread", "topologySpread: not a value of nodeflow's chart"),  # renamed topologySpreadConstraints
    ],
)
def test_an_unknown_key_fails_naming_it(path: str, says: str) -> None:
    [line] = failure(with_value(path, "x"))
    assert line.startswith(says)


def test_the_charts_key_table_is_values_yaml() -> None:
    """nodeflow.ownKeys (the keys validateValues lets through) lists exactly values.yaml's keys, and the keys
    of each of its blocks with fixed keys."""
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    [table] = re.findall(r'define "nodeflow.ownKeys" -}}\n(.*?)\n\{\{- end', helpers, re.S)
    own: dict[str, list[str] | None] = yaml.safe_load(table)
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    assert [k for k in own if "." not in k] == list(defaults)
    for path, keys in own.items():
        node = defaults
        for part in path.split("."):
            node = node[part]
        if keys is not None:
            assert sorted(keys) == sorted(node) or path == "settings", path
    assert own["settings"] is not None and "clusterCABundle" in own["settings"]


# -- what nodeflow takes of Karpenter's --------------------------------------------------------------


def test_karpenters_affinity_and_spread_terms_get_the_charts_selector() -> None:
    """As Karpenter's chart does (karpenter.patchAffinity and karpenter.patchTopologySpreadConstraints in
    its templates/_helpers.tpl): a term without a labelSelector selects the worker's pods; one with its
    own keeps it."""
    own = {"matchLabels": {"app": "other"}}
    values = REQUIRED_VALUES | {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone"}}
                ],
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": own}
                ]
            },
        },
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"},
            {
                "maxSkew": 2,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": own,
            },
        ],
    }
    deployment = one(render(values), "Deployment")
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    selector = {"matchLabels": deployment["spec"]["selector"]["matchLabels"]}
    pod = deployment["spec"]["template"]["spec"]
    anti = pod["affinity"]["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"] == selector
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["labelSelector"] == selector
    assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"] == own
    assert [c["labelSelector"] for c in pod["topologySpreadConstraints"]] == [selector, own]
    assert "labelSelector" not in values["topologySpreadConstraints"][0]  # the values are left as given


def test_the_full_values_karpenter_affinity_selects_the_workers_pods() -> None:
    docs = render(yaml.safe_load((CHART / "ci" / "full-values.yaml").read_text()))
    deployment = one(docs, "Deployment")
    selector = {"matchLabels": deployment["spec"]["selector"]["matchLabels"]}
    pod = deployment["spec"]["template"]["spec"]
    [term] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}
    assert pod["topologySpreadConstraints"][0]["minDomains"] == 2  # passed through as given
    assert (
        deployment["spec"]["revisionHistoryLimit"],
        deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
    ) == (5, 0)
    assert pod["dnsConfig"] == {"options": [{"name": "ndots", "value": "2"}]}
    assert one(docs, "PodDisruptionBudget")["metadata"]["name"] == "nodeflow-workers"
    assert one(docs, "Service")["metadata"]["annotations"] == {"example.com/owner": "platform"}


@pytest.mark.parametrize(
    ("values", "bundle"),
    [
        ({"clusterCABundle": "Y2E="}, "Y2E="),
        ({"settings": {"clusterCABundle": "a2FycGVudGVy"}}, "a2FycGVudGVy"),
        ({"clusterCABundle": "Y2E=", "settings": {"clusterCABundle": "a2FycGVudGVy"}}, "a2FycGVudGVy"),
    ],
    ids=["clusterCABundle", "settings.clusterCABundle", "settings-wins"],
)
def test_the_cluster_ca_bundle_reaches_the_worker(values: dict[str, Any], bundle: str) -> None:
    rendered = env(render(REQUIRED_VALUES | values))
    assert rendered["NODEFLOW_CLUSTER_CA_BUNDLE"] == bundle
    assert Settings(cluster_ca_bundle=rendered["NODEFLOW_CLUSTER_CA_BUNDLE"]).cluster_ca_bundle == bundle


# -- the ServiceMonitor ----------------------------------------------------------------------------


def test_the_service_monitor_is_off_by_default() -> None:
    assert "ServiceMonitor" not in {d["kind"] for d in render(REQUIRED_VALUES)}


def test_the_service_monitor_scrapes_both_metrics_ports_of_the_service() -> None:
    docs = render(yaml.safe_load((CHART / "ci" / "full-values.yaml").read_text()))
    monitor, service = one(docs, "ServiceMonitor"), one(docs, "Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == NAMESPACE
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"  # additionalLabels
    spec = monitor["spec"]
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert spec["sampleLimit"] == 50000
    assert [e["port"] for e in spec["endpoints"]] == [p["name"] for p in service["spec"]["ports"]]
    assert [e["port"] for e in spec["endpoints"]] == ["http-metrics", "temporal-metrics"]
    for endpoint in spec["endpoints"]:
        assert endpoint["path"] == "/metrics" and endpoint["interval"] == "30s"
        assert endpoint["scrapeTimeout"] == "10s"  # endpointConfig
        assert endpoint["relabelings"] == [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]
        assert endpoint["metricRelabelings"] == [{"sourceLabels": ["__name__"], "regex": "go_.*", "action": "drop"}]


def test_the_service_monitor_scrapes_only_the_ports_that_are_on() -> None:
    values = REQUIRED_VALUES | {"serviceMonitor": {"enabled": True}, "temporalMetricsPort": 0}
    spec = one(render(values), "ServiceMonitor")["spec"]
    assert spec["endpoints"] == [{"port": "http-metrics", "path": "/metrics"}]
    assert "sampleLimit" not in spec
    with pytest.raises(
        helm_python.HelmRenderError, match=r"serviceMonitor\.enabled: metricsPort and temporalMetricsPort are both 0"
    ):
        render(values | {"metricsPort": 0})


# -- values.schema.json: the types -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ("replicas", "two", "at '/replicas': got string, want integer"),
        ("metricsPort", 70000, "at '/metricsPort': maximum: got 70,000, want 65,535"),
        ("podLabels", {"team": 1}, "at '/podLabels/team': got number, want string"),
        ("serviceMonitor.enabled", "yes", "at '/serviceMonitor/enabled': got string, want boolean"),
        ("image.digest", "abc", "at '/image/digest'"),
    ],
)
def test_a_value_of_the_wrong_type_fails_naming_its_path(path: str, value: Any, says: str) -> None:
    """Helm checks values.schema.json before rendering; it types nodeflow's values and leaves which keys
    exist to nodeflow.validateValues (a schema's error could not name a Karpenter key's equivalent)."""
    with pytest.raises(helm_python.HelmValuesError, match=re.escape(says)):
        render(with_value(path, value))
