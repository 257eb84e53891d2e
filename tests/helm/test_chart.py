"""The chart lints, renders valid Kubernetes objects, and renders what an operator expects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from regions.runtime.settings import KafkaSettings, Settings
from regions.stores.kafka.topics import _topic_config, platform_topics
from tests.helm.chart import CHART, CI_VALUES, ROOT, Manifest, env_of, helm, kube_version, pod_specs, render

EU = CHART / "ci" / "eu-values.yaml"
PRODUCTION = CHART / "ci" / "production-values.yaml"

#: Every optional object switched on: HPA, PDBs, ServiceMonitor, KafkaTopics, dashboards, alerts.
EVERYTHING_ON = [
    "intake.autoscaling.enabled=true",
    "gateway.autoscaling.enabled=true",
    *(
        f"{c}.pdb.enabled=true"
        for c in ("intake", "gateway", "processor", "projector", "audit", "lifecycle", "replicator")
    ),
    "metrics.serviceMonitor.enabled=true",
    "metrics.serviceMonitor.labels.release=kube-prometheus-stack",
    "kafkaTopics.enabled=true",
    "kafkaTopics.cluster=eu",
    "dashboards.enabled=true",
    "alerts.enabled=true",
]
CUSTOM_KINDS = {"ServiceMonitor", "KafkaTopic", "PrometheusRule"}


def test_the_committed_schema_is_generated_from_the_current_models() -> None:
    done = subprocess.run(
        [sys.executable, ROOT / "helm" / "values_schema.py", "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_lint_is_strict_and_clean(values: Path) -> None:
    done = helm("lint", "--strict", "--kube-version", kube_version(), CHART, "-f", values)
    assert done.returncode == 0, done.stdout + done.stderr


def test_lint_refuses_the_chart_defaults_alone() -> None:
    """values.yaml has no region: lint validates the schema and must fail on it, not skip it."""
    done = helm("lint", "--strict", "--kube-version", kube_version(), CHART)
    assert done.returncode != 0
    assert "/global/region" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("values", "sets"),
    [*((v, []) for v in CI_VALUES), (EU, EVERYTHING_ON)],
    ids=[*(p.name for p in CI_VALUES), "eu-everything-on"],
)
def test_rendered_objects_are_valid_for_the_pinned_kubernetes(values: Path, sets: list[str]) -> None:
    manifests = render(values, sets=sets).manifests()
    checked = [m for m in manifests if m["kind"] not in CUSTOM_KINDS]
    for m in checked:
        try:
            kubernetes_validate.validate(m, kube_version(), strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{m['kind']} {m['metadata']['name']}: {exc.message} at {list(exc.path)}")
    assert {m["kind"] for m in checked} >= {"Deployment", "Service", "Job"}


def test_one_replicator_per_other_region_and_none_for_this_one() -> None:
    sets = ["global.regions.ap.kafkaBootstrapServers=ap-kafka:9092"]
    deployments = {m["metadata"]["name"] for m in render(EU, sets=sets).of_kind("Deployment")}
    replicators = {n for n in deployments if "replicator" in n}
    assert replicators == {"lb-leaderboard-replicator-us", "lb-leaderboard-replicator-ap"}
    rendered = render(EU, sets=sets)
    for name, source in [("lb-leaderboard-replicator-us", "us"), ("lb-leaderboard-replicator-ap", "ap")]:
        container = rendered.named("Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        assert env_of(container)["LB_REPLICATOR__SOURCE_REGION"] == source
        assert container["command"] == ["python", "-m", "replicator"]


def test_components_switch_off() -> None:
    sets = [f"{c}.enabled=false" for c in ("gateway", "audit", "replicator")]
    names = {m["metadata"]["name"] for m in render(EU, sets=sets).manifests()}
    assert not any(part in n for n in names for part in ("gateway", "audit", "replicator"))
    assert "lb-leaderboard-processor" in names


def test_every_workload_runs_restricted() -> None:
    for workload, pod in pod_specs(render(EU, sets=EVERYTHING_ON).manifests()):
        what = workload["metadata"]["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True, what
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, what
        assert pod["automountServiceAccountToken"] is False, what
        for c in pod["containers"]:
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False, what
            assert sc["capabilities"] == {"drop": ["ALL"]}, what
            assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"], what


def test_probes_use_the_health_endpoints_on_the_served_port() -> None:
    for workload, pod in pod_specs(render(EU).of_kind("Deployment")):
        c = pod["containers"][0]
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        (port,) = c["ports"]
        served = {k: v for k, v in env_of(c).items() if k.endswith(("__PORT", "__HEALTH_PORT"))}
        section = workload["metadata"]["labels"]["app.kubernetes.io/component"].upper()
        own = served.get(f"LB_{section}__PORT", served.get(f"LB_{section}__HEALTH_PORT"))
        assert own == str(port["containerPort"]), workload["metadata"]["name"]


def test_recommended_labels_and_distinct_selectors() -> None:
    selectors = []
    for workload, _ in pod_specs(render(EU).of_kind("Deployment")):
        labels = workload["metadata"]["labels"]
        for key in ("name", "instance", "version", "managed-by", "component", "part-of"):
            assert f"app.kubernetes.io/{key}" in labels, (workload["metadata"]["name"], key)
        selectors.append(json.dumps(workload["spec"]["selector"], sort_keys=True))
    assert len(selectors) == len(set(selectors))


def _known_settings(model: Any = Settings, prefix: str = "LB_") -> set[str]:
    names = set()
    for name, field in model.model_fields.items():
        env = f"{prefix}{name.upper()}"
        annotation = field.annotation
        if isinstance(annotation, type) and hasattr(annotation, "model_fields") and name != "regions":
            names |= _known_settings(annotation, f"{env}__")
        else:
            names.add(env)
    return names


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_every_rendered_setting_is_a_setting(values: Path) -> None:
    """A misspelt LB_ variable is refused by the settings at start-up; catch it at render time."""
    known = _known_settings()
    for workload, pod in pod_specs(render(values).manifests()):
        for c in pod["containers"]:
            unknown = {n for n in env_of(c) if n.startswith("LB_")} - known
            assert not unknown, (workload["metadata"]["name"], unknown)


def test_settings_maps_pass_fields_through() -> None:
    sets = ["processor.settings.dedupe_horizon_s=3600", "kafka.settings.linger_ms=5"]
    json_sets = ['gateway.settings.allowed_origins=["https://a.example","https://b.example"]']
    pod = render(EU, sets=sets, json_sets=json_sets).named("Deployment", "lb-leaderboard-audit")
    env = env_of(pod["spec"]["template"]["spec"]["containers"][0])
    assert env["LB_PROCESSOR__DEDUPE_HORIZON_S"] == "3600"
    assert env["LB_KAFKA__LINGER_MS"] == "5"
    assert json.loads(env["LB_GATEWAY__ALLOWED_ORIGINS"]) == ["https://a.example", "https://b.example"]
    assert json.loads(env["LB_REGIONS"])["us"]["kafka_bootstrap_servers"].startswith("us-kafka")


def test_large_numbers_render_as_integers() -> None:
    """YAML numbers reach templates as floats; 1048576 must not become 1.048576e+06."""
    env = env_of(
        render(EU, sets=["intake.settings.max_body_bytes=1048576"]).named(
            "Deployment", "lb-leaderboard-intake"
        )["spec"]["template"]["spec"]["containers"][0]
    )
    assert env["LB_INTAKE__MAX_BODY_BYTES"] == "1048576"


SECRET_ENV = ("LB_INTAKE__AWARD_KEYS", "LB_GATEWAY__ADMIN_TOKEN", "LB_KAFKA__SASL_PASSWORD",
              "LB_CASSANDRA__PASSWORD", "REDIS_PASSWORD")  # fmt: skip

#: The secrets each workload uses, by component: its own (award keys, admin token) and the
#: credentials of the stores its code connects to (Kafka SASL, Redis, Cassandra).
SECRETS_USED = {
    "intake": {"LB_INTAKE__AWARD_KEYS", "LB_KAFKA__SASL_PASSWORD", "REDIS_PASSWORD", "LB_CASSANDRA__PASSWORD"},
    "gateway": {"LB_GATEWAY__ADMIN_TOKEN", "REDIS_PASSWORD", "LB_CASSANDRA__PASSWORD"},
    "processor": {"LB_KAFKA__SASL_PASSWORD"},
    "projector": {"LB_KAFKA__SASL_PASSWORD", "REDIS_PASSWORD"},
    "audit": {"LB_KAFKA__SASL_PASSWORD", "LB_CASSANDRA__PASSWORD"},
    "lifecycle": {"LB_KAFKA__SASL_PASSWORD", "REDIS_PASSWORD", "LB_CASSANDRA__PASSWORD"},
    "replicator": {"LB_KAFKA__SASL_PASSWORD"},
    "bootstrap": {"LB_KAFKA__SASL_PASSWORD", "LB_CASSANDRA__PASSWORD"},
}


def test_existing_secrets_leave_no_secret_in_the_output() -> None:
    rendered = render(PRODUCTION)
    assert rendered.of_kind("Secret") == []
    for _, pod in pod_specs(rendered.manifests()):
        for c in pod["containers"]:
            env = env_of(c)
            for name in set(SECRET_ENV) & set(env):
                assert set(env[name]) == {"secretKeyRef"}, name
            assert all(isinstance(v, str) or set(v) == {"secretKeyRef"} for v in env.values())


def test_each_component_gets_only_the_secrets_it_uses() -> None:
    """Every secret of the production profile set, each workload's env holds exactly its own."""
    workloads = list(pod_specs(render(PRODUCTION).manifests()))
    assert {w["metadata"]["labels"]["app.kubernetes.io/component"] for w, _ in workloads} == set(SECRETS_USED)
    for workload, pod in workloads:
        component = workload["metadata"]["labels"]["app.kubernetes.io/component"]
        (c,) = pod["containers"]
        env = env_of(c)
        from_secrets = {name for name, value in env.items() if not isinstance(value, str)}
        assert from_secrets == SECRETS_USED[component], workload["metadata"]["name"]
        # The Redis URL carries Redis's password: only the components that use Redis get it.
        assert ("LB_REDIS__URL" in env) == ("REDIS_PASSWORD" in SECRETS_USED[component]), component


def test_store_credentials_of_the_production_profile() -> None:
    """Strimzi SCRAM over TLS with the cluster CA, Bitnami's Redis password, K8ssandra's superuser."""
    for _, pod in pod_specs(render(PRODUCTION).manifests()):
        (c,) = pod["containers"]
        env = env_of(c)
        assert env["LB_KAFKA__SECURITY_PROTOCOL"] == "SASL_SSL"
        assert env["LB_KAFKA__SASL_MECHANISM"] == "SCRAM-SHA-512"
        assert env["LB_KAFKA__SSL_CAFILE"] == "/etc/leaderboard/kafka-ca/ca.crt"
        assert {"name": "kafka-ca", "mountPath": "/etc/leaderboard/kafka-ca", "readOnly": True} in c[
            "volumeMounts"
        ]
        (ca,) = [v for v in pod["volumes"] if v["name"] == "kafka-ca"]
        assert ca["secret"] == {
            "secretName": "eu-cluster-ca-cert",
            "items": [{"key": "ca.crt", "path": "ca.crt"}],
        }
        assert env["LB_CASSANDRA__USERNAME"] == "eu-superuser"
        if "LB_REDIS__URL" not in env:  # a component that does not use Redis
            continue
        names = [e["name"] for e in c["env"]]
        assert names.index("REDIS_PASSWORD") < names.index(
            "LB_REDIS__URL"
        )  # $(...) expands earlier vars only
        assert env["LB_REDIS__URL"] == "redis://:$(REDIS_PASSWORD)@redis-eu-master.redis.svc:6379/0"


PRIVATE_NETWORK = {
    "kafka": "allow_plaintext_in_private_network",
    "redis": "allow_no_password_in_private_network",
    "cassandra": "allow_no_auth_in_private_network",
}


def test_production_renders_plaintext_stores_only_with_their_private_network_opt_outs() -> None:
    """The eu profile (no TLS, no store credentials) in production mode: refused, and rendered once
    each store's opt-out is set, which every process then reads (and warns about)."""
    assert not render(EU, sets=["mode=production"]).ok
    opt_outs = [f"{store}.settings.{name}=true" for store, name in PRIVATE_NETWORK.items()]
    rendered = render(EU, sets=["mode=production", *opt_outs])
    for _, pod in pod_specs(rendered.manifests()):
        env = env_of(pod["containers"][0])
        assert env["LB_MODE"] == "production"
        for store, name in PRIVATE_NETWORK.items():
            assert env[f"LB_{store.upper()}__{name.upper()}"] == "true"


def test_inline_secrets_go_into_a_secret_never_into_env(tmp_path: Path) -> None:
    values = yaml.safe_load(EU.read_text())
    values["intake"]["awardKeys"] = {"value": {"dev": "inline-award-secret"}}
    values["gateway"]["adminToken"] = {"value": "inline-admin-token"}
    values["kafka"]["sasl"] = {"mechanism": "PLAIN", "username": "u", "password": {"value": "inline-kafka"}}
    values["redis"]["password"] = {"value": "inline-redis"}
    values["cassandra"] |= {"username": "u", "password": {"value": "inline-cassandra"}}
    (tmp_path / "inline.yaml").write_text(yaml.safe_dump(values))
    rendered = render(tmp_path / "inline.yaml")
    (secret,) = rendered.of_kind("Secret")
    assert set(secret["data"]) == {
        "award-keys", "admin-token", "kafka-sasl-password", "redis-password", "cassandra-password"
    }  # fmt: skip
    for value in (
        "inline-award-secret",
        "inline-admin-token",
        "inline-kafka",
        "inline-redis",
        "inline-cassandra",
    ):
        assert value not in rendered.output
    env = env_of(
        rendered.named("Deployment", "lb-leaderboard-gateway")["spec"]["template"]["spec"]["containers"][0]
    )
    assert env["LB_GATEWAY__ADMIN_TOKEN"] == {
        "secretKeyRef": {"name": "lb-leaderboard-inline", "key": "admin-token"}
    }


def test_autoscaling_replaces_replicas_for_intake_and_gateway_only() -> None:
    rendered = render(EU, sets=EVERYTHING_ON)
    targets = {h["spec"]["scaleTargetRef"]["name"] for h in rendered.of_kind("HorizontalPodAutoscaler")}
    assert targets == {"lb-leaderboard-intake", "lb-leaderboard-gateway"}
    for name in targets:
        assert "replicas" not in rendered.named("Deployment", name)["spec"]
    assert rendered.named("Deployment", "lb-leaderboard-processor")["spec"]["replicas"] == 3


def test_service_monitor_takes_its_labels_and_scrapes_every_service() -> None:
    rendered = render(EU, sets=EVERYTHING_ON)
    (monitor,) = rendered.of_kind("ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    selector = monitor["spec"]["selector"]["matchLabels"]
    for service in rendered.of_kind("Service"):
        assert selector.items() <= service["metadata"]["labels"].items()
        assert [p["name"] for p in service["spec"]["ports"]] == ["http"]


def test_kafka_topics_match_the_topics_the_bootstrap_creates() -> None:
    kafka = KafkaSettings(partitions=6, replication_factor=3, min_insync_replicas=2)
    topics = {t["spec"]["topicName"]: t for t in render(EU, sets=EVERYTHING_ON).of_kind("KafkaTopic")}
    for spec in platform_topics(kafka, ["us"]):
        topic = topics.pop(spec.name)
        assert topic["spec"]["partitions"] == 6 and topic["spec"]["replicas"] == 3
        assert topic["metadata"]["labels"]["strimzi.io/cluster"] == "eu"
        config = {k: str(v).lower() for k, v in topic["spec"]["config"].items()}
        assert config == _topic_config(kafka, spec)
    assert not topics


def test_topology_spread_constraints_select_their_own_pods() -> None:
    json_sets = [
        'processor.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",'
        '"whenUnsatisfiable":"ScheduleAnyway"}]'
    ]
    pod = render(EU, json_sets=json_sets).named("Deployment", "lb-leaderboard-processor")
    (constraint,) = pod["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert constraint["labelSelector"]["matchLabels"] == pod["spec"]["selector"]["matchLabels"]


def test_the_processor_keeps_its_state_stores_on_a_volume_of_its_own() -> None:
    rendered = render(EU)
    pod = rendered.named("Deployment", "lb-leaderboard-processor")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert volumes["state"]["emptyDir"] == {"sizeLimit": "20Gi"}
    assert mounts["state"] == env_of(container)["LB_PROCESSOR__STORE_DIR"] == "/var/lib/leaderboard/processor"
    gateway = rendered.named("Deployment", "lb-leaderboard-gateway")["spec"]["template"]["spec"]
    assert "state" not in {v["name"] for v in gateway["volumes"]}


def test_bootstrap_job_is_a_hook_running_the_bootstrap() -> None:
    job = render(EU).named("Job", "lb-leaderboard-bootstrap")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "python", "-m", "regions.cli", "bootstrap"
    ]  # fmt: skip


def test_notes_name_the_region_its_sources_and_how_to_check(tmp_path: Path) -> None:
    notes = _render_notes(tmp_path, EU)
    assert 'region "eu"' in notes
    assert "copies the accepted awards of: us" in notes
    assert "/readyz" in notes and "lb_consumer_lag" in notes and "asOf" in notes


def _render_notes(tmp_path: Path, values: Path) -> str:
    """helm template never prints NOTES.txt: render it through a copy as a ConfigMap."""
    chart = tmp_path / "chart"
    subprocess.run(["cp", "-r", str(CHART), str(chart)], check=True)
    notes = (chart / "templates" / "NOTES.txt").read_text()
    (chart / "templates" / "NOTES.txt").unlink()
    (chart / "templates" / "_notes.tpl").write_text('{{- define "notes" -}}\n' + notes + "\n{{- end -}}\n")
    (chart / "templates" / "notes.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ include "notes" . | quote }}\n'
    )
    rendered = render(values, chart=chart)
    notes_map: Manifest = rendered.named("ConfigMap", "notes")
    text: str = notes_map["data"]["notes"]
    return text
