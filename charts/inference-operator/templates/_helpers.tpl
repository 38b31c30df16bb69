{{/*
Names, labels and the RBAC rules shared by the templates.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "inference-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: fullnameOverride, else the release name if it already
contains the chart name, else <release>-<chart>. At most 63 characters (DNS label).
*/}}
{{- define "inference-operator.fullname" -}}
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

{{/* helm.sh/chart: <name>-<version>. */}}
{{- define "inference-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels selecting the operator's pods (never change them: selectors are immutable). */}}
{{- define "inference-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "inference-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The standard labels on every object of the release. */}}
{{- define "inference-operator.labels" -}}
helm.sh/chart: {{ include "inference-operator.chart" . }}
{{ include "inference-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: inference-operator
{{- end }}

{{/* The operator's ServiceAccount name. */}}
{{- define "inference-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "inference-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The operator image: <repository>@<digest> when a digest is given (immutable), else
<repository>:<tag>, the tag defaulting to the chart's appVersion. */}}
{{- define "inference-operator.image" -}}
{{- if hasPrefix "sha256:" (toString .Values.image.tag) }}
{{- fail "image.tag is a digest (sha256:...): set image.digest instead, which renders repository@sha256:..." }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
{{- end }}

{{/*
What the operator needs in a namespace it watches, and nothing else: the same rules as
deploy/rbac/namespaced/role.yaml (tests/static/test_chart.py keeps them identical).
No wildcards, no Secrets, no escalate/bind/impersonate; children are never deleted by the
operator (the garbage collector does that).
*/}}
{{- define "inference-operator.namespacedRules" -}}
# Its own resource: watch it, add/remove its finalizer (patch), report status (update).
- apiGroups: ["serving.inference-operator.dev"]
  resources: ["inferenceservices"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["serving.inference-operator.dev"]
  resources: ["inferenceservices/status"]
  verbs: ["update"]
# Needed to create children with blockOwnerDeletion=true (OwnerReferencesPermissionEnforcement).
- apiGroups: ["serving.inference-operator.dev"]
  resources: ["inferenceservices/finalizers"]
  verbs: ["update"]
# The children.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch"]
# Read-only: to explain why replicas are not ready (unschedulable, image pull, crash loop).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]  # patch: a repeated Event is counted, not posted again
{{- end }}

{{/*
Cluster-wide mode: the namespaced rules in every namespace, plus the Node and Pod reads of
the GPU count. Same as deploy/rbac/cluster_role.yaml.
*/}}
{{- define "inference-operator.clusterRules" -}}
{{ include "inference-operator.namespacedRules" . }}
{{- if .Values.capacityReads.enabled }}
# Read-only, cluster mode only: every Node and every unfinished Pod (a field selector), cached
# slimmed, so that an Auto rollout counts the GPUs free per node. Without it (namespaced mode,
# or INFERENCE_OPERATOR_READ_CAPACITY=false), Auto surges one pod at a time and says so.
- apiGroups: [""]
  resources: ["nodes", "pods"]
  verbs: ["list", "watch"]
{{- end }}
{{- end }}

{{/*
The leader-election Lease's name: leaderElection.leaseName, else the full name. The Deployment
passes it to the operator and the leader-election Role names it (resourceNames): one source.
*/}}
{{- define "inference-operator.leaseName" -}}
{{- default (include "inference-operator.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}
