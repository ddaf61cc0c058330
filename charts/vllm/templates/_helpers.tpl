{{/* Names, labels, the vLLM container and pod: shared by the Deployment and the LeaderWorkerSet.
     configurator/emit/manifest.py writes the same objects without Helm; tests/test_chart.py compares them. */}}

{{- define "vllm.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "vllm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vllm.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "vllm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Checks the schema cannot express; each fails the render with one sentence. */}}
{{- define "vllm.validate" -}}
{{- if not .Values.model.name -}}
{{- fail "model.name is required: the Hugging Face id or path that vLLM serves" -}}
{{- end -}}
{{- $v := .Values.vllm -}}
{{- $ranks := mul (int (default 1 $v.tensorParallelSize)) (int (default 1 $v.pipelineParallelSize)) (int (default 1 $v.dataParallelSize)) -}}
{{- $gpus := mul (int .Values.nodes) (int .Values.gpusPerNode) -}}
{{- if ne (int $ranks) (int $gpus) -}}
{{- fail (printf "nodes x gpusPerNode request %d GPUs, but vLLM uses tensorParallelSize x pipelineParallelSize x dataParallelSize = %d: make them equal" (int $gpus) (int $ranks)) -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled .Values.keda.enabled -}}
{{- fail "autoscaling.enabled and keda.enabled: KEDA makes its own HorizontalPodAutoscaler; enable one of the two" -}}
{{- end -}}
{{- if gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas) -}}
{{- fail (printf "autoscaling.minReplicas (%d) is above autoscaling.maxReplicas (%d)" (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- if gt (int .Values.keda.minReplicaCount) (int .Values.keda.maxReplicaCount) -}}
{{- fail (printf "keda.minReplicaCount (%d) is above keda.maxReplicaCount (%d)" (int .Values.keda.minReplicaCount) (int .Values.keda.maxReplicaCount)) -}}
{{- end -}}
{{- range $kind, $list := .Values.resources -}}
{{- if hasKey $list $.Values.gpu.resource -}}
{{- fail (printf "resources.%s.%s: the GPU count comes from gpusPerNode; set it there" $kind $.Values.gpu.resource) -}}
{{- end -}}
{{- end -}}
{{- $known := include "vllm.reservedFlags" . | fromYaml -}}
{{- range $row := include "vllm.flagTable" . | fromYamlArray -}}
{{- range $s := $row.spellings -}}
{{- $_ := set $known $s (printf "%s.%s" $row.section $row.key) -}}
{{- end -}}
{{- end -}}
{{- range $a := .Values.extraArgs -}}
{{- if hasPrefix "-" $a -}}
{{- $name := regexReplaceAll "^--no-" (regexReplaceAll "=.*$" $a "" | replace "_" "-") "--" -}}
{{- if hasKey $known $name -}}
{{- fail (printf "extraArgs: %s is the value %s; set it there, so that the flag is passed once" $a (get $known $name)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* `vllm serve` arguments: the model, one flag per set value (in the flag table's order), the port, extraArgs. */}}
{{- define "vllm.args" -}}
- serve
- {{ .Values.model.name | quote }}
{{- range $row := include "vllm.flagTable" . | fromYamlArray }}
{{- $section := index $.Values $row.section }}
{{- if hasKey $section $row.key }}
{{- $val := index $section $row.key }}
{{- if not (kindIs "invalid" $val) }}
{{- if eq $row.type "bool" }}
{{- if $val }}
- {{ $row.flag | quote }}
{{- else if $row.negatable }}
- {{ printf "--no-%s" (trimPrefix "--" $row.flag) | quote }}
{{- end }}
{{- else }}
- {{ $row.flag | quote }}
{{- if or (eq $row.type "int") (eq $row.type "bytes") (and (eq $row.type "len") (not (kindIs "string" $val))) }}
- {{ int64 $val | toString | quote }}
{{- else }}
- {{ toString $val | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
- "--port"
- {{ int64 .Values.port | toString | quote }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The container. dict: root, role (server | leader | worker). */}}
{{- define "vllm.container" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $gpu := dict $v.gpu.resource (toString (int $v.gpusPerNode)) -}}
- name: vllm
  image: {{ printf "%s:%s" $v.image.repository $v.image.tag | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if eq .role "server" }}
  command:
    - vllm
  {{- else if eq .role "leader" }}
  command:
    - /bin/bash
    - -c
    - {{ printf "bash %s leader --ray_cluster_size=$LWS_GROUP_SIZE && exec vllm \"$@\"" $v.multiNode.rayScript | quote }}
    - vllm
  {{- else }}
  command:
    - /bin/bash
    - -c
    - {{ printf "exec bash %s worker --ray_address=$LWS_LEADER_ADDRESS" $v.multiNode.rayScript | quote }}
  {{- end }}
  {{- if ne .role "worker" }}
  args:
    {{- include "vllm.args" $root | nindent 4 }}
  ports:
    - name: http
      containerPort: {{ $v.port }}
      protocol: TCP
  {{- end }}
  env:
    - name: HF_HOME
      value: {{ $v.modelCache.mountPath | quote }}
    {{- if $v.hfToken.secretName }}
    - name: HF_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ $v.hfToken.secretName | quote }}
          key: {{ $v.hfToken.secretKey | quote }}
          optional: {{ $v.hfToken.optional }}
    {{- end }}
    {{- with $v.env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $v.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  resources:
    requests:
      {{- toYaml (merge (dict) $gpu $v.resources.requests) | nindent 6 }}
    limits:
      {{- toYaml (merge (dict) $gpu $v.resources.limits) | nindent 6 }}
  volumeMounts:
    - name: model-cache
      mountPath: {{ $v.modelCache.mountPath | quote }}
    {{- if $v.shm.enabled }}
    - name: shm
      mountPath: /dev/shm
    {{- end }}
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $v.lifecycle }}
  lifecycle:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if ne .role "worker" }}
  {{- $p := $v.probes }}
  startupProbe:
    httpGet:
      path: {{ $p.path }}
      port: http
    periodSeconds: {{ $p.startup.periodSeconds }}
    failureThreshold: {{ $p.startup.failureThreshold }}
    timeoutSeconds: {{ $p.startup.timeoutSeconds }}
  readinessProbe:
    httpGet:
      path: {{ $p.path }}
      port: http
    periodSeconds: {{ $p.readiness.periodSeconds }}
    failureThreshold: {{ $p.readiness.failureThreshold }}
    timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
  livenessProbe:
    httpGet:
      path: {{ $p.path }}
      port: http
    periodSeconds: {{ $p.liveness.periodSeconds }}
    failureThreshold: {{ $p.liveness.failureThreshold }}
    timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
  {{- end }}
  {{- with $v.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* A pod template (metadata and spec). dict: root, role. */}}
{{- define "vllm.podTemplate" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
metadata:
  labels:
    {{- include "vllm.selectorLabels" $root | nindent 4 }}
    {{- if ne .role "server" }}
    role: {{ .role }}
    {{- end }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $v.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with $v.serviceAccountName }}
  serviceAccountName: {{ . | quote }}
  {{- end }}
  {{- with $v.runtimeClassName }}
  runtimeClassName: {{ . | quote }}
  {{- end }}
  {{- with $v.priorityClassName }}
  priorityClassName: {{ . | quote }}
  {{- end }}
  {{- if not (kindIs "invalid" $v.terminationGracePeriodSeconds) }}
  terminationGracePeriodSeconds: {{ int64 $v.terminationGracePeriodSeconds }}
  {{- end }}
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- /* the planned GPU: one product -> nodeSelector, several -> required node affinity (In);
         a nodeSelector value replaces both, a nodeAffinity value replaces the affinity */}}
  {{- $selector := $v.nodeSelector }}
  {{- $affinity := deepCopy $v.affinity }}
  {{- $products := $v.gpu.products }}
  {{- if and (not $selector) (eq (len $products) 1) }}
  {{- $selector = dict $v.gpu.productLabel (first $products) }}
  {{- else if and (not $v.nodeSelector) (gt (len $products) 1) (not (hasKey $affinity "nodeAffinity")) }}
  {{- $term := dict "matchExpressions" (list (dict "key" $v.gpu.productLabel "operator" "In" "values" $products)) }}
  {{- $_ := set $affinity "nodeAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" (list $term))) }}
  {{- end }}
  {{- with $selector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.initContainers }}
  initContainers:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    {{- include "vllm.container" . | nindent 4 }}
    {{- with $v.extraContainers }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  volumes:
    {{- $p := $v.modelCache.persistence }}
    {{- if $p.existingClaim }}
    - name: model-cache
      persistentVolumeClaim:
        claimName: {{ $p.existingClaim | quote }}
    {{- else if and $p.enabled (eq (int $v.nodes) 1) }}
    - name: model-cache
      persistentVolumeClaim:
        claimName: {{ printf "%s-model-cache" (include "vllm.fullname" $root) | quote }}
    {{- else if not $p.enabled }}
    - name: model-cache
      emptyDir:
        sizeLimit: {{ $v.modelCache.sizeLimit | quote }}
    {{- end }}
    {{- if $v.shm.enabled }}
    - name: shm
      emptyDir:
        medium: Memory
        sizeLimit: {{ $v.shm.sizeLimit | quote }}
    {{- end }}
    {{- with $v.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The workload that autoscalers and budgets point at. */}}
{{- define "vllm.scaleTarget" -}}
{{- if eq (int .Values.nodes) 1 -}}
apiVersion: apps/v1
kind: Deployment
{{- else -}}
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
{{- end }}
name: {{ include "vllm.fullname" . }}
{{- end -}}

{{/* The name clients and vLLM's metrics (label model_name) use for the model. */}}
{{- define "vllm.servedName" -}}
{{- default .Values.model.name .Values.model.servedModelName -}}
{{- end -}}
