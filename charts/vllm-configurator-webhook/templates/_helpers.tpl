{{- define "vcw.name" -}}{{ .Release.Name }}-vllm-configurator-webhook{{- end -}}
{{- define "vcw.labels" -}}
app.kubernetes.io/name: vllm-configurator-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- define "vcw.selector" -}}
app.kubernetes.io/name: vllm-configurator-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "vcw.tlsSecret" -}}{{ include "vcw.name" . }}-tls{{- end -}}
