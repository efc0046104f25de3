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
# create: the first replica makes the leader Lease, and each replica whose Tunnel agents hold
# sessions makes its report Lease (RBAC cannot limit create to a name).
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
# get/update: read, acquire, renew and release the leader Lease (optimistic PUTs).
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: [{{ .Values.operator.leaderElectionId | quote }}]
  verbs: ["get", "update"]
# The replica reports: each replica says on a Lease of its own (named after its identity, so no
# resourceNames) which tunnel sessions its agents hold, for the leader's status writes. list/watch:
# the leader reads them all; get/update: a replica renews its own; delete: a replica deletes its
# own when it stops, the leader one that went stale (its replica died).
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "update", "delete"]
{{- end }}

{{- define "edgeward.edge.fullname" -}}
{{- printf "%s-edge" (include "edgeward.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The edge key Secret, read by the server (EDGEWARD_EDGE_KEY) and the edges: the user's, or the one
this chart generates (only next to the server it makes: a server elsewhere has its own key).
*/}}
{{- define "edgeward.edge.keySecretName" -}}
{{- if .Values.edge.edgeKey.existingSecret }}
{{- .Values.edge.edgeKey.existingSecret }}
{{- else if .Values.server.enabled }}
{{- printf "%s-key" (include "edgeward.edge.fullname" .) }}
{{- else }}
{{- fail "edge.edgeKey.existingSecret is required when server.enabled is false: put the edge key of your server (edgeward server --print-edge-key) in a Secret, or set edge.enabled=false" }}
{{- end }}
{{- end }}

{{/* The control plane the edges stream their configuration from. */}}
{{- define "edgeward.edge.apiUrl" -}}
{{- if .Values.edge.apiUrl }}
{{- .Values.edge.apiUrl }}
{{- else if .Values.server.enabled }}
{{- printf "http://%s.%s.svc:%d" (include "edgeward.server.fullname" .) .Release.Namespace (int .Values.server.service.port) }}
{{- else if .Values.operator.apiUrl }}
{{- .Values.operator.apiUrl }}
{{- else }}
{{- fail "edge.apiUrl is required when server.enabled is false (or set operator.apiUrl)" }}
{{- end }}
{{- end }}

{{/* Names of the tunnel certificate, as a JSON list: edge.tunnelNames, or the edge Service's in-cluster names. */}}
{{- define "edgeward.edge.tunnelNames" -}}
{{- if .Values.edge.tunnelNames }}
{{- toJson .Values.edge.tunnelNames }}
{{- else }}
{{- $service := include "edgeward.edge.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- list (printf "%s.%s.svc" $service $ns) (printf "%s.%s.svc.cluster.local" $service $ns) (printf "%s.%s" $service $ns) $service | toJson }}
{{- end }}
{{- end }}

{{/* --edge-addr of the operator: operator.edge.addr, or the in-cluster edge Service's tunnel port. */}}
{{- define "edgeward.operator.edgeAddr" -}}
{{- if .Values.operator.edge.addr }}
{{- .Values.operator.edge.addr }}
{{- else if .Values.edge.enabled }}
{{- if not .Values.edge.tunnel.service.enabled }}
{{- fail "operator.edge.addr is required when edge.tunnel.service.enabled is false (the operator's agents dial the edge Service's tunnel port by default)" }}
{{- end }}
{{- printf "%s.%s.svc:%d" (include "edgeward.edge.fullname" .) .Release.Namespace (int .Values.edge.tunnel.service.port) }}
{{- end }}
{{- end }}

{{/*
The tunnel certificate Secret (tls.crt, tls.key) every edge pod serves: the user's, or the one the
generate-keys hook makes once (self-signed for edge.tunnelNames). One for all pods: agents trust it
whichever pod they reach.
*/}}
{{- define "edgeward.edge.tunnelSecretName" -}}
{{- default (printf "%s-tunnel-tls" (include "edgeward.edge.fullname" .)) .Values.edge.tunnelCertificate.existingSecret }}
{{- end }}

{{/* The SSH host key Secret every edge pod presents: the user's, or the one the hook makes once. */}}
{{- define "edgeward.edge.sshHostKeySecretName" -}}
{{- default (printf "%s-ssh-host-key" (include "edgeward.edge.fullname" .)) .Values.edge.sshHostKey.existingSecret }}
{{- end }}

{{/* Secret holding the CA of --edge-ca: operator.edge.ca, else the edges' tunnel certificate Secret; empty: none. */}}
{{- define "edgeward.operator.edgeCaSecretName" -}}
{{- if .Values.operator.edge.ca.existingSecret }}
{{- .Values.operator.edge.ca.existingSecret }}
{{- else if .Values.edge.enabled }}
{{- include "edgeward.edge.tunnelSecretName" . }}
{{- end }}
{{- end }}

{{/*
Key of that Secret: operator.edge.ca.key; for the tunnel certificate Secret edge.tunnelCertificate.caKey,
else ca.crt when the Secret in the cluster has one (cert-manager writes it), else tls.crt (a
self-signed certificate is its own CA). `helm template` sees no cluster: tls.crt unless caKey is set.
*/}}
{{- define "edgeward.operator.edgeCaKey" -}}
{{- if .Values.operator.edge.ca.existingSecret }}
{{- .Values.operator.edge.ca.key }}
{{- else if .Values.edge.tunnelCertificate.caKey }}
{{- .Values.edge.tunnelCertificate.caKey }}
{{- else if not .Values.edge.tunnelCertificate.existingSecret }}
{{- /* The generated certificate is self-signed: its own CA. */ -}}
{{- "tls.crt" }}
{{- else }}
{{- $secret := lookup "v1" "Secret" .Release.Namespace .Values.edge.tunnelCertificate.existingSecret }}
{{- if and $secret $secret.data (index $secret.data "ca.crt") }}
{{- "ca.crt" }}
{{- else }}
{{- "tls.crt" }}
{{- end }}
{{- end }}
{{- end }}

{{/* --edge-server-name: operator.edge.serverName, or with the edges' tunnel certificate the first tunnel name. */}}
{{- define "edgeward.operator.edgeServerName" -}}
{{- if .Values.operator.edge.serverName }}
{{- .Values.operator.edge.serverName }}
{{- else if and .Values.edge.enabled (not .Values.operator.edge.ca.existingSecret) }}
{{- first (include "edgeward.edge.tunnelNames" . | fromJsonArray) }}
{{- end }}
{{- end }}
