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

{{/*
The operator's permissions in every namespace it watches: a ClusterRole when it watches all of
them, a Role per namespace otherwise. Derived from what src/operator does; keep config/rbac/role.yaml
identical (test/kubernetes/chart.test.ts compares them).
*/}}
{{- define "edgeward.operator.rules" -}}
# The 17 edgeward.dev kinds. list/watch: one informer per kind; get: a fresh read before retrying
# a finalizer patch or a status write that hit a conflict; patch: JSON patch of
# metadata.finalizers (add before the remote create, remove after the remote delete). No
# create/update/delete: the operator never writes spec and never deletes a CR.
- apiGroups: ["edgeward.dev"]
  resources:
    - agentingresses
    - botusers
    - certificateauthorities
    - eventdestinations
    - eventsubscriptions
    - httpsedgeroutes
    - httpsedges
    - ippolicies
    - reservedaddresses
    - sshcertificateauthorities
    - sshcredentials
    - sshhostcertificates
    - sshusercertificates
    - tcpedges
    - tlscertificates
    - tlsedges
    - tunnelcredentials
  verbs: ["get", "list", "watch", "patch"]
# status: written with a PUT of the status subresource (conditions, id, observedGeneration).
- apiGroups: ["edgeward.dev"]
  resources:
    - agentingresses/status
    - botusers/status
    - certificateauthorities/status
    - eventdestinations/status
    - eventsubscriptions/status
    - httpsedgeroutes/status
    - httpsedges/status
    - ippolicies/status
    - reservedaddresses/status
    - sshcertificateauthorities/status
    - sshcredentials/status
    - sshhostcertificates/status
    - sshusercertificates/status
    - tcpedges/status
    - tlscertificates/status
    - tlsedges/status
    - tunnelcredentials/status
  verbs: ["update"]
# The kinds that own the Secrets the operator writes (a TunnelCredential's token, an SSH
# certificate's certificate): those Secrets carry an ownerReference with blockOwnerDeletion, which
# clusters running the OwnerReferencesPermissionEnforcement admission plugin only allow to a
# client that may update the owner's finalizers subresource.
- apiGroups: ["edgeward.dev"]
  resources:
    - sshhostcertificates/finalizers
    - sshusercertificates/finalizers
    - tunnelcredentials/finalizers
  verbs: ["update"]
# Secrets. list/watch: the informer of the Secrets the operator wrote (label
# app.kubernetes.io/managed-by=edgeward-operator; RBAC cannot narrow by label); get: secretKeyRef
# values and the check for a foreign Secret before writing one; create/update: credential tokens
# and certificates. No delete: a written Secret goes with its CR (ownerReference, garbage collector).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch", "create", "update"]
# core/v1 Events about the CRs (kubectl describe): created, then patched (count, lastTimestamp)
# when the same event repeats.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
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
