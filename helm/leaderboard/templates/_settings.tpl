{{/*
The one mapping from values to the platform's settings (regions/runtime/settings/, LB_* variables).
Every container gets the same plain settings, so every process reads the same settings; only the
replicators add their source region. Secrets (and the Redis URL, which carries Redis's password)
go only to the components that use them: see leaderboard.uses. A component's `settings` map passes
LB_<SECTION>__<FIELD> through (values.schema.json lists the fields), so a new setting needs no
change here.
*/}}

{{/*
What each component (and the bootstrap job) works with, as a JSON list: the stores it connects to
and the secrets it checks. It gets those stores' credentials and those secrets, and nothing else.
*/}}
{{- define "leaderboard.uses" -}}
{{- $uses := dict
  "intake" (list "kafka" "redis" "cassandra" "awardKeys")
  "gateway" (list "redis" "cassandra" "adminToken")
  "processor" (list "kafka")
  "projector" (list "kafka" "redis")
  "audit" (list "kafka" "cassandra")
  "lifecycle" (list "kafka" "redis" "cassandra")
  "replicator" (list "kafka")
  "bootstrap" (list "kafka" "cassandra")
-}}
{{- get $uses . | toJson -}}
{{- end -}}

{{- define "leaderboard.settingValue" -}}
{{- if kindIs "string" . -}}{{ . }}{{- else -}}{{ toJson . }}{{- end -}}
{{- end -}}

{{- define "leaderboard.regionsJson" -}}
{{- $out := dict -}}
{{- range $name, $r := .Values.global.regions -}}
{{- $entry := dict "kafka_bootstrap_servers" $r.kafkaBootstrapServers -}}
{{- if $r.redisUrl }}{{ $_ := set $entry "redis_url" $r.redisUrl }}{{ end -}}
{{- $_ := set $out $name $entry -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* Plain settings by variable name: (dict "root" $ "uses" $uses). */}}
{{- define "leaderboard.settings" -}}
{{- $v := .root.Values -}}
{{- $local := get $v.global.regions $v.global.region | default dict -}}
{{- $env := dict
  "LB_MODE" $v.mode
  "LB_REGION" $v.global.region
  "LB_REGIONS" (include "leaderboard.regionsJson" .root)
  "LB_KAFKA__BOOTSTRAP_SERVERS" ($local.kafkaBootstrapServers | default "")
  "LB_KAFKA__PARTITIONS" $v.kafka.partitions
  "LB_KAFKA__TOPIC_PREFIX" $v.kafka.topicPrefix
  "LB_KAFKA__REPLICATION_FACTOR" $v.kafka.replicationFactor
  "LB_KAFKA__MIN_INSYNC_REPLICAS" $v.kafka.minInsyncReplicas
  "LB_CASSANDRA__CONTACT_POINTS" $v.cassandra.contactPoints
  "LB_CASSANDRA__PORT" $v.cassandra.port
  "LB_CASSANDRA__LOCAL_DC" $v.cassandra.localDatacenter
  "LB_CASSANDRA__KEYSPACE" $v.cassandra.keyspace
  "LB_CASSANDRA__REPLICATION_FACTOR" $v.cassandra.replicationFactor
  "LB_INTAKE__HOST" "0.0.0.0"
  "LB_INTAKE__PORT" $v.intake.containerPort
  "LB_GATEWAY__HOST" "0.0.0.0"
  "LB_GATEWAY__PORT" $v.gateway.containerPort
  "LB_PROCESSOR__HEALTH_PORT" $v.processor.containerPort
  "LB_PROCESSOR__STORE_DIR" "/var/lib/leaderboard/processor"
  "LB_PROJECTOR__HEALTH_PORT" $v.projector.containerPort
  "LB_AUDIT__HEALTH_PORT" $v.audit.containerPort
  "LB_LIFECYCLE__HEALTH_PORT" $v.lifecycle.containerPort
  "LB_REPLICATOR__HEALTH_PORT" $v.replicator.containerPort
  "LB_KAFKA__SECURITY_PROTOCOL" (include "leaderboard.kafkaProtocol" .root)
-}}
{{- if $v.kafka.sasl.mechanism -}}
{{- $_ := set $env "LB_KAFKA__SASL_MECHANISM" $v.kafka.sasl.mechanism -}}
{{- $_ := set $env "LB_KAFKA__SASL_USERNAME" $v.kafka.sasl.username -}}
{{- end -}}
{{- if $v.kafka.tls.caSecret -}}
{{- $_ := set $env "LB_KAFKA__SSL_CAFILE" "/etc/leaderboard/kafka-ca/ca.crt" -}}
{{- end -}}
{{- if $v.cassandra.username -}}
{{- $_ := set $env "LB_CASSANDRA__USERNAME" $v.cassandra.username -}}
{{- end -}}
{{- if has "redis" .uses -}}
{{- $_ := set $env "LB_REDIS__URL" $v.redis.url -}}
{{- if include "leaderboard.hasSecret" $v.redis.password -}}
{{- $parts := splitn "://" 2 $v.redis.url -}}
{{- $_ := set $env "LB_REDIS__URL" (printf "%s://:$(REDIS_PASSWORD)@%s" $parts._0 $parts._1) -}}
{{- end -}}
{{- end -}}
{{- range $section := list "kafka" "redis" "cassandra" "intake" "gateway" "processor" "projector" "audit" "lifecycle" "replicator" "windows" -}}
{{- range $field, $value := (get $v $section | default dict).settings -}}
{{- $_ := set $env (printf "LB_%s__%s" (upper $section) (upper $field)) $value -}}
{{- end -}}
{{- end -}}
{{- range $name := keys $env | sortAlpha }}
- name: {{ $name }}
  value: {{ include "leaderboard.settingValue" (get $env $name) | quote }}
{{- end }}
{{- end -}}

{{- define "leaderboard.kafkaProtocol" -}}
{{- $k := .Values.kafka -}}
{{- if $k.sasl.mechanism -}}{{ ternary "SASL_SSL" "SASL_PLAINTEXT" $k.tls.enabled }}{{- else -}}{{ ternary "SSL" "PLAINTEXT" $k.tls.enabled }}{{- end -}}
{{- end -}}

{{/* "true" when a secret value has a source. */}}
{{- define "leaderboard.hasSecret" -}}
{{- if or .value .existingSecret }}true{{ end -}}
{{- end -}}

{{/* Name of the Secret the chart makes from inline (development) values. */}}
{{- define "leaderboard.inlineSecretName" -}}
{{- printf "%s-inline" (include "leaderboard.fullname" .) -}}
{{- end -}}

{{/* secretKeyRef of a secret value: its existingSecret, or the chart's inline Secret at `key`. */}}
{{- define "leaderboard.secretRef" -}}
{{- $s := .secret -}}
{{- if $s.existingSecret -}}
secretKeyRef: {name: {{ $s.existingSecret.name | quote }}, key: {{ $s.existingSecret.key | quote }}}
{{- else -}}
secretKeyRef: {name: {{ include "leaderboard.inlineSecretName" .root | quote }}, key: {{ .key | quote }}}
{{- end -}}
{{- end -}}

{{/*
Secret settings, each only for the components that use it (leaderboard.uses): the intake's award
keys, the gateway's admin token, and the credentials of the stores a component connects to. In
production mode a process given no award keys or admin token has none (never the development
ones). REDIS_PASSWORD comes first: Kubernetes expands $(REDIS_PASSWORD) in LB_REDIS__URL only from
variables defined before it. Both take (dict "root" $ "uses" $uses).
*/}}
{{- define "leaderboard.redisPassword" -}}
{{- if and (has "redis" .uses) (include "leaderboard.hasSecret" .root.Values.redis.password) -}}
- name: REDIS_PASSWORD
  valueFrom:
    {{- include "leaderboard.secretRef" (dict "root" .root "secret" .root.Values.redis.password "key" "redis-password") | nindent 4 }}
{{- end -}}
{{- end -}}

{{- define "leaderboard.secretSettings" -}}
{{- $v := .root.Values -}}
{{- if has "adminToken" .uses }}
- name: LB_GATEWAY__ADMIN_TOKEN
  valueFrom:
    {{- include "leaderboard.secretRef" (dict "root" .root "secret" $v.gateway.adminToken "key" "admin-token") | nindent 4 }}
{{- end }}
{{- if has "awardKeys" .uses }}
- name: LB_INTAKE__AWARD_KEYS
  valueFrom:
    {{- include "leaderboard.secretRef" (dict "root" .root "secret" $v.intake.awardKeys "key" "award-keys") | nindent 4 }}
{{- end }}
{{- if and (has "kafka" .uses) (include "leaderboard.hasSecret" $v.kafka.sasl.password) }}
- name: LB_KAFKA__SASL_PASSWORD
  valueFrom:
    {{- include "leaderboard.secretRef" (dict "root" .root "secret" $v.kafka.sasl.password "key" "kafka-sasl-password") | nindent 4 }}
{{- end }}
{{- if and (has "cassandra" .uses) (include "leaderboard.hasSecret" $v.cassandra.password) }}
- name: LB_CASSANDRA__PASSWORD
  valueFrom:
    {{- include "leaderboard.secretRef" (dict "root" .root "secret" $v.cassandra.password "key" "cassandra-password") | nindent 4 }}
{{- end }}
{{- end -}}

{{/* Inline values the chart keeps in its own Secret, by key (empty with existingSecret everywhere). */}}
{{- define "leaderboard.inlineSecretData" -}}
{{- $data := dict -}}
{{- with .Values.gateway.adminToken.value }}{{ $_ := set $data "admin-token" . }}{{ end -}}
{{- with .Values.intake.awardKeys.value }}{{ $_ := set $data "award-keys" (toJson .) }}{{ end -}}
{{- with .Values.kafka.sasl.password.value }}{{ $_ := set $data "kafka-sasl-password" . }}{{ end -}}
{{- with .Values.redis.password.value }}{{ $_ := set $data "redis-password" . }}{{ end -}}
{{- with .Values.cassandra.password.value }}{{ $_ := set $data "cassandra-password" . }}{{ end -}}
{{- toJson $data -}}
{{- end -}}

{{/* The env of every container: (dict "root" $ "w" $workload). */}}
{{- define "leaderboard.env" -}}
{{- $only := dict "root" .root "uses" (include "leaderboard.uses" .w.component | fromJsonArray) -}}
{{- include "leaderboard.redisPassword" $only }}
{{- include "leaderboard.settings" $only }}
{{- include "leaderboard.secretSettings" $only }}
{{- if .w.source }}
- name: LB_REPLICATOR__SOURCE_REGION
  value: {{ .w.source | quote }}
{{- end }}
{{- with .extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The workloads to render, as JSON: one per enabled component, and one replicator per region of
global.regions other than this one. `module` is what `python -m` runs.
*/}}
{{- define "leaderboard.workloads" -}}
{{- $v := .Values -}}
{{- $out := list -}}
{{- range $c := list "intake" "gateway" "processor" "projector" "audit" "lifecycle" -}}
{{- if (get $v $c).enabled -}}
{{- $module := ternary "gateway" (printf "regions.%s" $c) (eq $c "gateway") -}}
{{- $out = append $out (dict "component" $c "name" $c "module" $module "source" "") -}}
{{- end -}}
{{- end -}}
{{- if $v.replicator.enabled -}}
{{- range $name := keys $v.global.regions | sortAlpha -}}
{{- if ne $name $v.global.region -}}
{{- $out = append $out (dict "component" "replicator" "name" (printf "replicator-%s" $name) "module" "replicator" "source" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
