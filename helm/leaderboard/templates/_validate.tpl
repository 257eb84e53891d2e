{{/*
Rules that compare one value with another, which values.schema.json cannot express. Rendered
first by deployments.yaml, so lint, template, install and upgrade all fail on them.
*/}}
{{- define "leaderboard.validate" -}}
{{- $v := .Values -}}
{{- $errors := list -}}
{{- if not (hasKey $v.global.regions $v.global.region) -}}
{{- $errors = append $errors (printf "global.region %q is not one of global.regions (%s)" $v.global.region (keys $v.global.regions | sortAlpha | join ", ")) -}}
{{- end -}}
{{- if and $v.processor.enabled (gt (int $v.processor.replicas) (int $v.kafka.partitions)) -}}
{{- $errors = append $errors (printf "processor.replicas %d is above kafka.partitions %d: each awards partition is worked by one processor, the extra ones would only stand by" (int $v.processor.replicas) (int $v.kafka.partitions)) -}}
{{- end -}}
{{- range $c := list "intake" "gateway" -}}
{{- $a := (get $v $c).autoscaling -}}
{{- if and $a.enabled (gt (int $a.minReplicas) (int $a.maxReplicas)) -}}
{{- $errors = append $errors (printf "%s.autoscaling.minReplicas %d is above maxReplicas %d" $c (int $a.minReplicas) (int $a.maxReplicas)) -}}
{{- end -}}
{{- end -}}
{{- $sasl := $v.kafka.sasl -}}
{{- if and $sasl.mechanism (not (and $sasl.username (include "leaderboard.hasSecret" $sasl.password))) -}}
{{- $errors = append $errors (printf "kafka.sasl.mechanism %s needs kafka.sasl.username and kafka.sasl.password" $sasl.mechanism) -}}
{{- end -}}
{{- if and $v.kafka.tls.caSecret (not $v.kafka.tls.enabled) -}}
{{- $errors = append $errors "kafka.tls.caSecret is set but kafka.tls.enabled is false" -}}
{{- end -}}
{{- if ne (empty $v.cassandra.username) (empty (include "leaderboard.hasSecret" $v.cassandra.password)) -}}
{{- $errors = append $errors "cassandra.username and cassandra.password go together: set both or neither" -}}
{{- end -}}
{{- if $errors -}}
{{- fail (printf "\n%s" (join "\n" $errors)) -}}
{{- end -}}
{{- end -}}
