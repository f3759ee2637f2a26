{{/* The release's full name: the release name, with the chart's name unless it already holds it. */}}
{{- define "nodeflow.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "nodeflow.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select the worker's pods (stable across upgrades). */}}
{{- define "nodeflow.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodeflow.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nodeflow.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "nodeflow.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "nodeflow.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "nodeflow.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The worker's image: image.repository (required) at image.digest, else at image.tag, else at the
chart's appVersion. */}}
{{- define "nodeflow.image" -}}
{{- $repository := required (include "nodeflow.required" "image.repository") .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (required (include "nodeflow.required" "image.tag") (default .Chart.AppVersion .Values.image.tag)) -}}
{{- end -}}
{{- end -}}

{{/* The container's memory: resources.memory, else baseMemoryMiB + maxCachedWorkflows x
memoryPerCachedWorkflowKiB + clusterPods x memoryPerPodKiB (rounded up to whole MiB); see values.yaml. */}}
{{- define "nodeflow.memory" -}}
{{- if .Values.resources.memory -}}
{{- .Values.resources.memory -}}
{{- else -}}
{{- $workflows := mul (int64 .Values.maxCachedWorkflows) (int64 .Values.resources.memoryPerCachedWorkflowKiB) -}}
{{- $pods := mul (int64 .Values.resources.clusterPods) (int64 .Values.resources.memoryPerPodKiB) -}}
{{- $kib := add $workflows $pods -}}
{{- printf "%dMi" (add (int64 .Values.resources.baseMemoryMiB) (div (add $kib 1023) 1024)) -}}
{{- end -}}
{{- end -}}

{{/* The worker container's env, as a YAML list: every NODEFLOW_<SETTING> (and AWS_REGION) whose value
is set (not null, not ""), then the Temporal API key from its Secret, then extraEnv. Values are strings. */}}
{{- define "nodeflow.env" -}}
{{- $tls := .Values.temporal.tls -}}
{{- $dir := include "nodeflow.tlsDir" . -}}
{{- $known := list "NodeRepair" "ReservedCapacity" "SpotToSpotConsolidation" "NodeOverlay" "StaticCapacity" "CapacityBuffer" -}}
{{- $settings := .Values.settings | default dict -}}
{{- $gates := list -}}
{{- range $key, $on := merge (dict) ($settings.featureGates | default dict) (.Values.featureGates | default dict) -}}
{{- $name := title $key -}}
{{- if not (has $name $known) -}}
{{- fail (printf "featureGates.%s: unknown feature gate; the gates are %s (as camelCase keys)" $key (join ", " $known)) -}}
{{- end -}}
{{- if not (kindIs "invalid" $on) -}}
{{- $gates = append $gates (printf "%s=%s" $name (toString $on)) -}}
{{- end -}}
{{- end -}}
{{- $gate := join "," $gates -}}
{{- /* 0 is a value here (no VM overhead, no reserved ENI): a set settings.* key wins even when 0 */ -}}
{{- $vmOverhead := ternary .Values.vmMemoryOverheadPercent $settings.vmMemoryOverheadPercent (kindIs "invalid" $settings.vmMemoryOverheadPercent) -}}
{{- $reservedENIs := ternary .Values.reservedENIs $settings.reservedENIs (kindIs "invalid" $settings.reservedENIs) -}}
{{- $disableDryRun := ternary .Values.disableDryRun $settings.disableDryRun (kindIs "invalid" $settings.disableDryRun) -}}
{{- $pairs := list
  (list "NODEFLOW_CLUSTER_NAME" (required (include "nodeflow.required" "clusterName") (include "nodeflow.clusterName" .)))
  (list "NODEFLOW_CLUSTER_ENDPOINT" (coalesce $settings.clusterEndpoint .Values.clusterEndpoint ""))
  (list "NODEFLOW_CLUSTER_CA_BUNDLE" (coalesce $settings.clusterCABundle .Values.clusterCABundle ""))
  (list "NODEFLOW_INTERRUPTION_QUEUE" (coalesce $settings.interruptionQueue .Values.interruptionQueue ""))
  (list "NODEFLOW_BATCH_IDLE_DURATION" (coalesce $settings.batchIdleDuration .Values.batchIdleDuration ""))
  (list "NODEFLOW_BATCH_MAX_DURATION" (coalesce $settings.batchMaxDuration .Values.batchMaxDuration ""))
  (list "NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT" $vmOverhead)
  (list "NODEFLOW_RESERVED_ENIS" $reservedENIs)
  (list "NODEFLOW_PREFERENCE_POLICY" (coalesce $settings.preferencePolicy .Values.preferencePolicy ""))
  (list "NODEFLOW_MIN_VALUES_POLICY" (coalesce $settings.minValuesPolicy .Values.minValuesPolicy ""))
  (list "NODEFLOW_DISABLE_DRY_RUN" (ternary "true" "" (eq (toString $disableDryRun) "true")))
  (list "AWS_REGION" .Values.awsRegion)
  (list "NODEFLOW_KUBERNETES_VERSION" .Values.kubernetesVersion)
  (list "NODEFLOW_TEMPORAL_ADDRESS" (required (include "nodeflow.required" "temporal.address") .Values.temporal.address))
  (list "NODEFLOW_TEMPORAL_NAMESPACE" .Values.temporal.namespace)
  (list "NODEFLOW_TASK_QUEUE" .Values.temporal.taskQueue)
  (list "NODEFLOW_TEMPORAL_TLS" (ternary "true" "" (eq (toString $tls.enabled) "true")))
  (list "NODEFLOW_TEMPORAL_TLS_CA_FILE" (ternary (printf "%s/ca.crt" $dir) "" (and $tls.enabled $tls.secretName $tls.caKey | empty | not)))
  (list "NODEFLOW_TEMPORAL_TLS_CERT_FILE" (ternary (printf "%s/tls.crt" $dir) "" (and $tls.enabled $tls.secretName $tls.certKey | empty | not)))
  (list "NODEFLOW_TEMPORAL_TLS_KEY_FILE" (ternary (printf "%s/tls.key" $dir) "" (and $tls.enabled $tls.secretName $tls.keyKey | empty | not)))
  (list "NODEFLOW_TEMPORAL_TLS_SERVER_NAME" (ternary $tls.serverName "" (eq (toString $tls.enabled) "true")))
  (list "NODEFLOW_FEATURE_GATES" $gate)
  (list "NODEFLOW_DISRUPTION_METHODS" .Values.disruptionMethods)
  (list "NODEFLOW_MAX_CACHED_WORKFLOWS" .Values.maxCachedWorkflows)
  (list "NODEFLOW_MAX_CONCURRENT_WORKFLOW_TASKS" .Values.maxConcurrentWorkflowTasks)
  (list "NODEFLOW_MAX_CONCURRENT_WORKFLOW_TASK_POLLS" .Values.maxConcurrentWorkflowTaskPolls)
  (list "NODEFLOW_HEALTH_PROBE_PORT" .Values.healthProbePort)
  (list "NODEFLOW_METRICS_PORT" .Values.metricsPort)
  (list "NODEFLOW_TEMPORAL_METRICS_PORT" .Values.temporalMetricsPort)
  (list "NODEFLOW_LOG_FORMAT" .Values.logFormat)
  (list "OTEL_TRACES_EXPORTER" .Values.tracing.exporter)
  (list "OTEL_EXPORTER_OTLP_ENDPOINT" .Values.tracing.otlpEndpoint)
  (list "OTEL_SERVICE_NAME" .Values.tracing.serviceName)
  (list "OTEL_RESOURCE_ATTRIBUTES" .Values.tracing.resourceAttributes)
  (list "OTEL_TRACES_SAMPLER" .Values.tracing.sampler)
  (list "OTEL_TRACES_SAMPLER_ARG" .Values.tracing.samplerArg) -}}
{{- $env := list -}}
{{- range $pairs -}}
{{- $value := index . 1 -}}
{{- if not (or (kindIs "invalid" $value) (eq (toString $value) "")) -}}
{{- $env = append $env (dict "name" (index . 0) "value" (toString $value)) -}}
{{- end -}}
{{- end -}}
{{- /* the leader-election Lease lives in the worker's own namespace (the Role grants it there) */ -}}
{{- $env = append $env (dict "name" "POD_NAMESPACE" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.namespace"))) -}}
{{- with .Values.temporal.apiKey.secretName -}}
{{- $ref := dict "name" . "key" $.Values.temporal.apiKey.key -}}
{{- $env = append $env (dict "name" "NODEFLOW_TEMPORAL_API_KEY" "valueFrom" (dict "secretKeyRef" $ref)) -}}
{{- end -}}
{{- toYaml (concat $env (default (list) .Values.extraEnv)) -}}
{{- end -}}

{{- define "nodeflow.tlsDir" -}}/etc/nodeflow/temporal-tls{{- end -}}


{{/* Karpenter's chart puts the controller's settings under `settings` (settings.clusterName,
settings.clusterEndpoint, settings.clusterCABundle, settings.interruptionQueue, settings.featureGates.*, settings.batchIdleDuration,
settings.batchMaxDuration, settings.vmMemoryOverheadPercent, settings.reservedENIs,
settings.preferencePolicy, settings.minValuesPolicy, settings.disableDryRun): a values file written for it works here too, each of those winning over the
top-level key of the same name (nodeflow.env, nodeflow.clusterName). */}}

{{/* The cluster's name: settings.clusterName (Karpenter's key), else clusterName. */}}
{{- define "nodeflow.clusterName" -}}
{{- with coalesce (.Values.settings | default dict).clusterName .Values.clusterName -}}{{ . }}{{- end -}}
{{- end -}}

{{/* The pod's securityContext (fixed: non-root 65532, RuntimeDefault seccomp). */}}
{{- define "nodeflow.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* .Values.affinity, with the worker pods' selector as the labelSelector of every podAffinity and
podAntiAffinity term that has none (required terms, and the podAffinityTerm of preferred ones), as
Karpenter's chart does (karpenter.patchAffinity in charts/karpenter/templates/_helpers.tpl of
aws/karpenter-provider-aws): its default affinity has a required kubernetes.io/hostname podAntiAffinity
term with no selector, which would otherwise match no pod. Works on a copy: the values stay as given. */}}
{{- define "nodeflow.affinity" -}}
{{- $affinity := deepCopy (.Values.affinity | default dict) -}}
{{- $selector := dict "matchLabels" (include "nodeflow.selectorLabels" . | fromYaml) -}}
{{- range $kind := list "podAffinity" "podAntiAffinity" -}}
{{- with index $affinity $kind -}}
{{- range $term := .requiredDuringSchedulingIgnoredDuringExecution | default list -}}
{{- if not (hasKey $term "labelSelector") -}}{{- $_ := set $term "labelSelector" (deepCopy $selector) -}}{{- end -}}
{{- end -}}
{{- range $weighted := .preferredDuringSchedulingIgnoredDuringExecution | default list -}}
{{- with $weighted.podAffinityTerm -}}
{{- if not (hasKey . "labelSelector") -}}{{- $_ := set . "labelSelector" (deepCopy $selector) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $affinity -}}
{{- end -}}

{{/* .Values.topologySpreadConstraints, each without a labelSelector given the worker pods' selector, as
Karpenter's chart does (karpenter.patchTopologySpreadConstraints, same file). */}}
{{- define "nodeflow.topologySpreadConstraints" -}}
{{- $selector := dict "matchLabels" (include "nodeflow.selectorLabels" . | fromYaml) -}}
{{- $constraints := list -}}
{{- range .Values.topologySpreadConstraints | default list -}}
{{- $constraint := deepCopy . -}}
{{- if not (hasKey $constraint "labelSelector") -}}{{- $_ := set $constraint "labelSelector" (deepCopy $selector) -}}{{- end -}}
{{- $constraints = append $constraints $constraint -}}
{{- end -}}
{{- toYaml $constraints -}}
{{- end -}}

{{/* nodeflow's values: every top-level key of values.yaml; where a key lists keys, its value may hold
only those (a typo under it fails too). Keys listed null take any value (free-form maps, lists,
scalars, featureGates, which nodeflow.env checks). tests/unit/test_chart_values.py keeps this in step with
values.yaml. */}}
{{- define "nodeflow.ownKeys" -}}
image: [repository, tag, digest, pullPolicy]
imagePullSecrets:
nameOverride:
fullnameOverride:
settings: [clusterName, clusterEndpoint, clusterCABundle, interruptionQueue, featureGates, batchIdleDuration, batchMaxDuration, vmMemoryOverheadPercent, reservedENIs, preferencePolicy, minValuesPolicy, disableDryRun, eksControlPlane]
clusterName:
clusterCABundle:
clusterEndpoint:
interruptionQueue:
awsRegion:
kubernetesVersion:
batchIdleDuration:
batchMaxDuration:
vmMemoryOverheadPercent:
reservedENIs:
preferencePolicy:
minValuesPolicy:
disableDryRun:
temporal: [address, namespace, taskQueue, tls, apiKey]
temporal.tls: [enabled, secretName, caKey, certKey, keyKey, serverName]
temporal.apiKey: [secretName, key]
logLevel:
logFormat:
tracing: [otlpEndpoint, exporter, serviceName, resourceAttributes, sampler, samplerArg]
featureGates:
disruptionMethods:
maxCachedWorkflows:
maxConcurrentWorkflowTasks:
maxConcurrentWorkflowTaskPolls:
healthProbePort:
metricsPort:
temporalMetricsPort:
service: [annotations]
serviceMonitor: [enabled, additionalLabels, interval, relabelings, metricRelabelings, endpointConfig, sampleLimit]
dashboards: [enabled, namespace, annotations]
extraEnv:
replicas:
revisionHistoryLimit:
strategy:
podDisruptionBudget: [name, maxUnavailable]
resources: [cpu, cpuLimit, baseMemoryMiB, memoryPerCachedWorkflowKiB, clusterPods, memoryPerPodKiB, memory]
serviceAccount: [create, name, roleArn, annotations]
rbac: [create]
priorityClassName:
schedulerName:
dnsPolicy:
dnsConfig:
podAnnotations:
podLabels:
nodeSelector:
tolerations:
affinity:
topologySpreadConstraints:
terminationGracePeriodSeconds:
{{- end -}}

{{/* The keys of Karpenter's chart values (charts/karpenter/values.yaml of aws/karpenter-provider-aws,
v1.0 to v1.14, and logConfig and webhook from before v1.1) that nodeflow does not act on, each with
nodeflow's equivalent (`use`) or why there is none (`none`). Such a key fails the render unless its value
asks for what nodeflow does anyway: `ok` lists those values; without `ok` an empty value is (null, "",
false, 0, {} or [], nested too); `same` names nodeflow's value it may equal. Karpenter's keys nodeflow
does act on are in nodeflow.ownKeys (nameOverride, fullnameOverride, imagePullSecrets, service,
serviceAccount, serviceMonitor, replicas, revisionHistoryLimit, strategy, podLabels, podAnnotations,
podDisruptionBudget, priorityClassName, terminationGracePeriodSeconds, schedulerName, dnsPolicy,
dnsConfig, nodeSelector, affinity, topologySpreadConstraints, tolerations, logLevel and settings.*). */}}
{{- define "nodeflow.karpenterKeys" -}}
additionalAnnotations: {none: "the chart annotates no object but the pods (podAnnotations), the ServiceAccount (serviceAccount.annotations), the Service (service.annotations) and the dashboard (dashboards.annotations)"}
additionalClusterRoleRules: {none: "the ClusterRole grants exactly what the worker calls; bind a ClusterRole of your own to the ServiceAccount for more"}
additionalLabels: {none: "the chart labels no object but the pods with more (podLabels) and the ServiceMonitor (serviceMonitor.additionalLabels)"}
controller.containerName: {none: "the container is named worker", ok: ["worker"]}
controller.env: {use: "extraEnv"}
controller.envFrom: {use: "extraEnv, one variable each (valueFrom.secretKeyRef or configMapKeyRef)"}
controller.extraVolumeMounts: {none: "the worker mounts only /tmp and temporal.tls.secretName"}
controller.healthProbe.port: {use: "healthProbePort", same: "healthProbePort"}
controller.image: {use: "image.repository, image.tag and image.digest (nodeflow's worker image, not Karpenter's controller)"}
controller.metrics.port: {use: "metricsPort (Karpenter's metrics) and temporalMetricsPort", same: "metricsPort"}
controller.resources: {use: "resources.cpu, resources.cpuLimit and resources.memory (or memory sized from maxCachedWorkflows and resources.clusterPods)"}
controller.securityContext: {none: "the chart sets the container's securityContext: non-root 65532, read-only root filesystem, no capabilities, RuntimeDefault seccomp"}
controller.sidecarContainer: {none: "the pod runs the worker container only"}
controller.sidecarVolumeMounts: {none: "the pod runs the worker container only"}
extraVolumes: {none: "the worker mounts only /tmp and temporal.tls.secretName"}
hostNetwork: {none: "the pod runs on the pod network"}
imagePullPolicy: {use: "image.pullPolicy", same: "image.pullPolicy"}
initContainers: {none: "the pod runs the worker container only"}
logConfig: {use: "logLevel and logFormat"}
logErrorOutputPaths: {none: "the worker writes every log line to standard error", ok: [["stderr"]]}
logOutputPaths: {none: "the worker writes every log line to standard error", ok: [["stderr"]]}
podSecurityContext: {none: "the chart sets the pod's securityContext: runAsNonRoot, runAsUser, runAsGroup and fsGroup 65532, RuntimeDefault seccomp; a podSecurityContext holding only those same values is accepted"}
postInstallHook: {none: "the chart runs no hook"}
settings.amiRefreshInterval: {none: "nodeflow reads an EC2NodeClass's AMIs at most once a minute", ok: ["1m"]}
settings.awsFeatureGates: {none: "nodeflow has no AWS feature gate"}
settings.disableClusterStateObservability: {none: "the worker always publishes its cluster state metrics and events"}
settings.enableZonalShift: {none: "nodeflow does not follow EKS zonal shifts"}
settings.ignoreDRARequests: {none: "nodeflow's scheduler does not read DRA requests (as ignoreDRARequests: true)", ok: [true]}
settings.isolatedVPC: {use: "extraEnv NODEFLOW_ON_DEMAND_PRICE_REFRESH_INTERVAL=Never (the shipped on-demand price table, no call to the Pricing API)"}
settings.subnetRefreshInterval: {none: "nodeflow reads an EC2NodeClass's subnets at most once a minute", ok: ["1m"]}
webhook: {none: "nodeflow serves no webhook"}
{{- end -}}

{{/* The message of a required value left empty: what it is and how to set it. */}}
{{- define "nodeflow.required" -}}
{{- $messages := dict
  "clusterName" "clusterName is required: the EKS cluster nodeflow launches nodes for (--set clusterName=<cluster>, or Karpenter's settings.clusterName); the chart has no default"
  "temporal.address" "temporal.address is required: host:port of the Temporal frontend the worker connects to (--set temporal.address=<host:port>); the chart has no default"
  "image.repository" "image.repository is required: the nodeflow worker image's repository (--set image.repository=<account>.dkr.ecr.<region>.amazonaws.com/nodeflow, README \"Install on EKS\" step 4)"
  "image.tag" "image.tag or image.digest is required: the chart has no appVersion to default the tag to (--set image.tag=<tag>)" -}}
{{- get $messages . -}}
{{- end -}}

{{/* Prints something when the value would do something: not null, "", false, 0, {} or [], and for a map
some value of it. */}}
{{- define "nodeflow.isSet" -}}
{{- if kindIs "map" . -}}
{{- range $_, $value := . -}}{{- include "nodeflow.isSet" $value -}}{{- end -}}
{{- else if not (empty .) -}}set
{{- end -}}
{{- end -}}

{{/* Fails the render, naming each value the chart does not take: a key of Karpenter's chart nodeflow
does not act on (nodeflow.karpenterKeys: with nodeflow's equivalent, or why there is none), and a key
that is neither nodeflow's (nodeflow.ownKeys) nor Karpenter's (a typo), then each required value left
empty (clusterName, temporal.address, image.repository), all in one message. Called first by
deployment.yaml; values.schema.json has already checked the types. */}}
{{- define "nodeflow.validateValues" -}}
{{- $own := include "nodeflow.ownKeys" . | fromYaml -}}
{{- $karpenter := include "nodeflow.karpenterKeys" . | fromYaml -}}
{{- $podSecurityContext := include "nodeflow.podSecurityContext" . | fromYaml -}}
{{- $errors := list -}}
{{- /* Karpenter's keys, each where it is set to what nodeflow does not do */ -}}
{{- range $path, $rule := $karpenter -}}
{{- $value := $.Values -}}
{{- range $part := splitList "." $path -}}
{{- $value = index (ternary $value (dict) (kindIs "map" $value)) $part -}}
{{- end -}}
{{- $json := toJson $value -}}
{{- $accepted := or (kindIs "invalid" $value) (eq $json "\"\"") -}}
{{- if hasKey $rule "ok" -}}
{{- range $rule.ok -}}{{- if eq (toJson .) $json -}}{{- $accepted = true -}}{{- end -}}{{- end -}}
{{- else if not (include "nodeflow.isSet" $value) -}}
{{- $accepted = true -}}
{{- end -}}
{{- with $rule.same -}}
{{- $ours := $.Values -}}
{{- range $part := splitList "." . -}}{{- $ours = index (ternary $ours (dict) (kindIs "map" $ours)) $part -}}{{- end -}}
{{- if eq (toJson $ours) $json -}}{{- $accepted = true -}}{{- end -}}
{{- end -}}
{{- if and (eq $path "podSecurityContext") (kindIs "map" $value) -}}
{{- $accepted = true -}}
{{- range $key, $v := $value -}}
{{- if ne (toJson $v) (toJson (index $podSecurityContext $key)) -}}{{- $accepted = false -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $accepted -}}
{{- if $rule.use -}}
{{- $errors = append $errors (printf "%s: Karpenter's chart value, which nodeflow does not take; nodeflow's equivalent: %s" $path $rule.use) -}}
{{- else -}}
{{- $errors = append $errors (printf "%s: Karpenter's chart value, which nodeflow does not take; nodeflow has no equivalent: %s" $path $rule.none) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* keys that are neither nodeflow's nor Karpenter's: at the top level, and under the blocks of fixed keys */ -}}
{{- $blocks := dict "" (list) -}}
{{- range $key, $keys := $own -}}
{{- if not (contains "." $key) -}}{{- $_ := set $blocks "" (append (get $blocks "") $key) -}}{{- end -}}
{{- if $keys -}}{{- $_ := set $blocks $key $keys -}}{{- end -}}
{{- end -}}
{{- $_ := set $blocks "controller" (list) -}}{{- /* Karpenter's; every key of it is in nodeflow.karpenterKeys */ -}}
{{- $karpenterPaths := keys $karpenter -}}
{{- range $block, $keys := $blocks -}}
{{- $value := $.Values -}}
{{- if $block -}}
{{- range $part := splitList "." $block -}}{{- $value = index (ternary $value (dict) (kindIs "map" $value)) $part -}}{{- end -}}
{{- end -}}
{{- if kindIs "map" $value -}}
{{- range $key, $_ := $value -}}
{{- $path := ternary (printf "%s.%s" $block $key) $key (ne $block "") -}}
{{- $karpenters := false -}}
{{- range $karpenterPaths -}}{{- if or (eq . $path) (hasPrefix (printf "%s." $path) .) -}}{{- $karpenters = true -}}{{- end -}}{{- end -}}
{{- if not (or (has $key $keys) $karpenters) -}}
{{- if and $block $keys -}}
{{- $errors = append $errors (printf "%s: not a value of nodeflow's chart (nor of Karpenter's); %s takes %s" $path $block (join ", " $keys)) -}}
{{- else -}}
{{- $errors = append $errors (printf "%s: not a value of nodeflow's chart (nor of Karpenter's); values.yaml lists nodeflow's" $path) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* the required values, named together with the rest */ -}}
{{- if not (include "nodeflow.clusterName" .) -}}{{- $errors = append $errors (include "nodeflow.required" "clusterName") -}}{{- end -}}
{{- if not .Values.temporal.address -}}{{- $errors = append $errors (include "nodeflow.required" "temporal.address") -}}{{- end -}}
{{- if not .Values.image.repository -}}{{- $errors = append $errors (include "nodeflow.required" "image.repository") -}}{{- end -}}
{{- if not (or .Values.image.digest .Values.image.tag .Chart.AppVersion) -}}{{- $errors = append $errors (include "nodeflow.required" "image.tag") -}}{{- end -}}
{{- if $errors -}}
{{- fail (printf "nodeflow's chart cannot take these values (values.yaml describes every value it takes):\n  %s" (join "\n  " $errors)) -}}
{{- end -}}
{{- end -}}
