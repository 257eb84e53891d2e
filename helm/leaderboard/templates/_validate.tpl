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
{{- if eq $v.mode "production" -}}
{{- $optOut := dict -}}
{{- range $store := list "kafka" "redis" "cassandra" -}}
{{- $_ := set $optOut $store ((get $v $store).settings | default dict) -}}
{{- end -}}
{{- if not (or $v.kafka.tls.enabled $optOut.kafka.allow_plaintext_in_private_network) -}}
{{- $errors = append $errors "mode production: kafka.tls.enabled is false, so awards would cross the network unencrypted; enable it (with kafka.sasl), or for brokers inside a private network set kafka.settings.allow_plaintext_in_private_network: true" -}}
{{- end -}}
{{- if not (or (include "leaderboard.hasSecret" $v.redis.password) (contains "@" $v.redis.url) $optOut.redis.allow_no_password_in_private_network) -}}
{{- $errors = append $errors "mode production: redis.password is not set; set it, or for a Redis inside a private network set redis.settings.allow_no_password_in_private_network: true" -}}
{{- end -}}
{{- if not (or $v.cassandra.username $optOut.cassandra.allow_no_auth_in_private_network) -}}
{{- $errors = append $errors "mode production: cassandra.username is not set; set it and cassandra.password, or for a Cassandra inside a private network set cassandra.settings.allow_no_auth_in_private_network: true" -}}
{{- end -}}
{{- end -}}
{{- if $errors -}}
{{- fail (printf "\n%s" (join "\n" $errors)) -}}
{{- end -}}
{{- end -}}
