{{/* Names, labels, image, security contexts and probes shared by every workload. */}}

{{- define "leaderboard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "leaderboard.fullname" -}}
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

{{- define "leaderboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "leaderboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "leaderboard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "leaderboard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: leaderboard
leaderboard/region: {{ .Values.global.region }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* What tells one workload's pods apart within the release: (dict "w" $workload). */}}
{{- define "leaderboard.componentLabels" -}}
app.kubernetes.io/component: {{ .w.component }}
{{- if .w.source }}
leaderboard/source-region: {{ .w.source }}
{{- end }}
{{- end -}}

{{/* Selector of one workload: (dict "root" $ "w" $workload). */}}
{{- define "leaderboard.workloadSelector" -}}
{{ include "leaderboard.selectorLabels" .root }}
{{ include "leaderboard.componentLabels" . }}
{{- end -}}

{{- define "leaderboard.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The restricted Pod Security Standard; values merge over it. */}}
{{- define "leaderboard.podSecurityContext" -}}
{{- $base := dict "runAsNonRoot" true "runAsUser" 10001 "runAsGroup" 10001 "fsGroup" 10001 "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- toYaml (mergeOverwrite $base (deepCopy .Values.podSecurityContext)) -}}
{{- end -}}

{{- define "leaderboard.containerSecurityContext" -}}
{{- $base := dict "runAsNonRoot" true "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "capabilities" (dict "drop" (list "ALL")) "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- toYaml (mergeOverwrite $base (deepCopy .Values.containerSecurityContext)) -}}
{{- end -}}

{{/* Probes of one component's values: liveness and startup on /healthz, readiness on /readyz. */}}
{{- define "leaderboard.probes" -}}
{{- $defaults := dict "liveness" (dict "periodSeconds" 10 "timeoutSeconds" 3 "failureThreshold" 3) "readiness" (dict "periodSeconds" 10 "timeoutSeconds" 3 "failureThreshold" 3) "startup" (dict "periodSeconds" 5 "timeoutSeconds" 3 "failureThreshold" 60) -}}
{{- $probes := mergeOverwrite $defaults (deepCopy (default dict .probes)) -}}
{{- range $kind, $path := dict "liveness" "/healthz" "readiness" "/readyz" "startup" "/healthz" }}
{{ $kind }}Probe:
  httpGet: {path: {{ $path }}, port: http}
  {{- toYaml (get $probes $kind) | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Pod volumes and mounts: the root filesystem is read-only, /tmp is the one writable path. */}}
{{- define "leaderboard.volumes" -}}
- name: tmp
  emptyDir: {sizeLimit: 64Mi}
{{- with .Values.kafka.tls.caSecret }}
- name: kafka-ca
  secret:
    secretName: {{ .name | quote }}
    items: [{key: {{ .key | quote }}, path: ca.crt}]
{{- end }}
{{- end -}}

{{- define "leaderboard.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.kafka.tls.caSecret }}
- name: kafka-ca
  mountPath: /etc/leaderboard/kafka-ca
  readOnly: true
{{- end }}
{{- end -}}

{{- define "leaderboard.podCommon" -}}
{{- with .Values.image.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- with .Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
automountServiceAccountToken: false
securityContext:
  {{- include "leaderboard.podSecurityContext" . | nindent 2 }}
volumes:
  {{- include "leaderboard.volumes" . | nindent 2 }}
{{- end -}}
