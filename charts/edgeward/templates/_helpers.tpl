{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "edgeward.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name prefix of every object: the release name, plus the chart name unless it already holds it. */}}
{{- define "edgeward.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "edgeward.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Standard labels; call with (dict "ctx" $ "component" "operator"). */}}
{{- define "edgeward.labels" -}}
helm.sh/chart: {{ include "edgeward.chart" .ctx }}
{{ include "edgeward.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: edgeward
{{- end }}

{{- define "edgeward.selectorLabels" -}}
app.kubernetes.io/name: {{ include "edgeward.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "edgeward.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "edgeward.operator.fullname" -}}
{{- printf "%s-operator" (include "edgeward.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "edgeward.server.fullname" -}}
{{- printf "%s-server" (include "edgeward.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "edgeward.operator.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (include "edgeward.operator.fullname" .) .Values.operator.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The server's admin key Secret: the user's, or the one this chart generates. */}}
{{- define "edgeward.server.adminSecretName" -}}
{{- default (printf "%s-admin-key" (include "edgeward.server.fullname" .)) .Values.server.adminApiKey.existingSecret }}
{{- end }}

{{/* The management API the operator talks to. */}}
{{- define "edgeward.operator.apiUrl" -}}
{{- if .Values.operator.apiUrl }}
{{- .Values.operator.apiUrl }}
{{- else if .Values.server.enabled }}
{{- printf "http://%s.%s.svc:%d" (include "edgeward.server.fullname" .) .Release.Namespace (int .Values.server.service.port) }}
{{- else }}
{{- fail "operator.apiUrl is required when server.enabled is false: set it to the URL of your edgeward management API (e.g. --set operator.apiUrl=https://edgeward.example.com)" }}
{{- end }}
{{- end }}

{{/* Secret name and key of the operator's API key; see operator.apiKey in values.yaml. */}}
{{- define "edgeward.operator.apiKeySecretName" -}}
{{- if .Values.operator.apiKey.existingSecret }}
{{- .Values.operator.apiKey.existingSecret }}
{{- else if .Values.operator.apiKey.value }}
{{- printf "%s-api-key" (include "edgeward.operator.fullname" .) }}
{{- else if .Values.server.enabled }}
{{- include "edgeward.server.adminSecretName" . }}
{{- else }}
{{- fail "operator.apiKey is required when server.enabled is false: set operator.apiKey.existingSecret (and .key) or operator.apiKey.value" }}
{{- end }}
{{- end }}

{{- define "edgeward.operator.apiKeySecretKey" -}}
{{- if or .Values.operator.apiKey.existingSecret .Values.operator.apiKey.value (not .Values.server.enabled) }}
{{- .Values.operator.apiKey.key }}
{{- else }}
{{- .Values.server.adminApiKey.key }}
{{- end }}
{{- end }}

{{/* Leader election, in the release namespace only. */}}
{{- define "edgeward.operator.leaderElectionRules" -}}
# create: the first replica makes the Lease (RBAC cannot limit create to a name).
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
# get/update: read, acquire, renew and release it (optimistic PUTs), this Lease only.
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: [{{ .Values.operator.leaderElectionId | quote }}]
  verbs: ["get", "update"]
{{- end }}
