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

{{- define "nodeflow.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
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
  (list "NODEFLOW_CLUSTER_NAME" (include "nodeflow.clusterName" .))
  (list "NODEFLOW_CLUSTER_ENDPOINT" (coalesce $settings.clusterEndpoint .Values.clusterEndpoint ""))
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
  (list "NODEFLOW_TEMPORAL_ADDRESS" .Values.temporal.address)
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
settings.clusterEndpoint, settings.interruptionQueue, settings.featureGates.*, settings.batchIdleDuration,
settings.batchMaxDuration, settings.vmMemoryOverheadPercent, settings.reservedENIs,
settings.preferencePolicy, settings.minValuesPolicy, settings.disableDryRun): a values file written for it works here too, each of those winning over the
top-level key of the same name (nodeflow.env, nodeflow.clusterName). */}}

{{/* The cluster's name: settings.clusterName (Karpenter's key), else clusterName. */}}
{{- define "nodeflow.clusterName" -}}
{{- with coalesce (.Values.settings | default dict).clusterName .Values.clusterName -}}{{ . }}{{- end -}}
{{- end -}}

{{/* The keys under `settings` nodeflow acts on; NOTES.txt names any other as not acted on. */}}
{{- define "nodeflow.ignoredSettings" -}}
{{- $used := list "clusterName" "clusterEndpoint" "interruptionQueue" "featureGates" "batchIdleDuration" "batchMaxDuration" "vmMemoryOverheadPercent" "reservedENIs" "preferencePolicy" "minValuesPolicy" "disableDryRun" -}}
{{- $ignored := list -}}
{{- range $key, $_ := (.Values.settings | default dict) -}}
{{- if not (has $key $used) -}}{{- $ignored = append $ignored (printf "settings.%s" $key) -}}{{- end -}}
{{- end -}}
{{- join ", " $ignored -}}
{{- end -}}
