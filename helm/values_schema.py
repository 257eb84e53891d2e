"""Typed model of the leaderboard chart's values; writes ``leaderboard/values.schema.json`` from it.

    .venv/bin/python helm/values_schema.py          # rewrite the schema
    .venv/bin/python helm/values_schema.py --check  # exit 1 when the committed schema is stale

Each component's ``settings`` map passes fields of its section of ``regions/settings.py`` straight
through as ``LB_<SECTION>__<FIELD>``; its schema is taken from that section, so a setting added there
is a value of the chart once the schema is regenerated, and a misspelt one is refused. Fields the
chart sets itself (addresses, ports, secrets) are not part of those maps.

JSON Schema cannot compare one value with another: that ``global.region`` is one of
``global.regions`` and that processor replicas do not exceed the awards partitions are checked by
``templates/_validate.tpl`` when the chart renders.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from regions.settings import (
    AuditSettings,
    CassandraSettings,
    GatewaySettings,
    IntakeSettings,
    KafkaSettings,
    ProcessorSettings,
    ProjectorSettings,
    RedisSettings,
    ReplicatorSettings,
)

SCHEMA_PATH = Path(__file__).parent / "leaderboard" / "values.schema.json"

#: Settings sections whose remaining fields a ``settings`` map may set, and the fields the chart
#: sets itself from dedicated values.
SECTIONS: dict[str, tuple[type[BaseModel], frozenset[str]]] = {
    "kafka": (
        KafkaSettings,
        frozenset(
            {"bootstrap_servers", "partitions", "topic_prefix", "replication_factor", "min_insync_replicas"}
            | {"security_protocol", "ssl_cafile", "sasl_mechanism", "sasl_username"}
        ),
    ),
    "redis": (RedisSettings, frozenset({"url"})),
    "cassandra": (
        CassandraSettings,
        frozenset({"contact_points", "port", "local_dc", "keyspace", "replication_factor", "username"}),
    ),
    "intake": (IntakeSettings, frozenset({"host", "port"})),
    "gateway": (GatewaySettings, frozenset({"host", "port"})),
    "processor": (ProcessorSettings, frozenset({"health_port"})),
    "projector": (ProjectorSettings, frozenset({"health_port"})),
    "audit": (AuditSettings, frozenset({"health_port"})),
    "replicator": (ReplicatorSettings, frozenset({"source_region", "health_port"})),
}

NAME = r"^[a-z][a-z0-9-]{0,31}$"


class Values(BaseModel):
    """Base of every values object: camelCase keys, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


def passthrough_schema(section: str) -> dict[str, Any]:
    """JSON schema of a ``settings`` map: the section's fields less the chart's and the secrets."""
    model, owned = SECTIONS[section]
    schema = _inline_enums(model.model_json_schema())
    properties = {
        name: {k: v for k, v in prop.items() if k != "title"}
        for name, prop in schema["properties"].items()
        if name not in owned and not _is_secret(prop)
    }
    return {
        "type": "object",
        "description": f"Other LB_{section.upper()}__* settings by field name (regions/settings.py).",
        "properties": properties,
        "additionalProperties": False,
    }


def _inline_enums(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace references to the section's enums by the enums; a section nesting models is refused."""
    defs = schema.pop("$defs", {})
    for name, definition in defs.items():
        if "enum" not in definition:
            raise ValueError(f"settings section nests the model {name}; pass-through maps take plain fields")

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return {
                    **defs[node["$ref"].rsplit("/", 1)[1]],
                    **{k: v for k, v in node.items() if k != "$ref"},
                }
            return {k: inline(v) for k, v in node.items()}
        return [inline(v) for v in node] if isinstance(node, list) else node

    result: dict[str, Any] = inline(schema)
    return result


def _is_secret(prop: dict[str, Any]) -> bool:
    """SecretStr fields (alone, optional or as map values) come from Secrets, never from a map."""
    return '"format": "password"' in json.dumps(prop)


def _settings_field(section: str) -> Any:
    return Field(
        default_factory=dict,
        json_schema_extra=lambda schema: schema.update(passthrough_schema(section)),
    )


class SecretRef(Values):
    name: str = Field(min_length=1, description="Name of an existing Secret in the release namespace.")
    key: str = Field(min_length=1, description="Key in that Secret.")


#: Exactly one source: both is refused, and so is neither.
_ONE_SOURCE: dict[str, Any] = {"oneOf": [{"required": ["value"]}, {"required": ["existingSecret"]}]}


class SecretValue(Values):
    """A secret string: from an existing Secret, or inline for development (never both)."""

    model_config = ConfigDict(json_schema_extra=_ONE_SOURCE)
    value: str | SkipJsonSchema[None] = Field(
        None, min_length=1, description="Inline value (development only)."
    )
    existing_secret: SecretRef | SkipJsonSchema[None] = Field(
        None, description="Where the value is kept instead."
    )


class OptionalSecretValue(Values):
    """A secret string that may be left out: from an existing Secret, or inline (never both)."""

    model_config = ConfigDict(json_schema_extra={"not": {"required": ["value", "existingSecret"]}})
    value: str | SkipJsonSchema[None] = Field(
        None, min_length=1, description="Inline value (development only)."
    )
    existing_secret: SecretRef | SkipJsonSchema[None] = Field(
        None, description="Where the value is kept instead."
    )


class AwardKeys(Values):
    """HMAC secrets per key id, a JSON object; two ids are active while keys rotate."""

    model_config = ConfigDict(json_schema_extra=_ONE_SOURCE)
    value: dict[str, str] | SkipJsonSchema[None] = Field(
        None, min_length=1, description="Inline key id -> secret (development only)."
    )
    existing_secret: SecretRef | SkipJsonSchema[None] = Field(
        None, description="Secret key holding the JSON object {keyId: secret, ...}."
    )


class RegionEndpoint(Values):
    kafka_bootstrap_servers: str = Field(
        min_length=1, description="That region's Kafka brokers, host:port,..."
    )
    redis_url: str | None = Field(None, min_length=1, description="That region's Redis (HOME reads).")


class Global(Values):
    region: str = Field(pattern=NAME, description="This region's name; one of global.regions.")
    regions: dict[str, RegionEndpoint] = Field(
        min_length=1,
        description="Every region of the deployment, this one included: name -> endpoints.",
        json_schema_extra={"propertyNames": {"pattern": NAME}},
    )


class Image(Values):
    repository: str = Field("leaderboard-platform", min_length=1, description="Image repository.")
    tag: str = Field("", description="Image tag (default: the chart's appVersion).")
    digest: str = Field("", pattern=r"^(sha256:[0-9a-f]{64})?$", description="Pin by digest (wins over tag).")
    pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        "IfNotPresent", description="Pull policy."
    )
    pull_secrets: list[str] = Field([], description="Names of image pull Secrets.")


class KafkaTls(Values):
    enabled: bool = Field(False, description="Connect to the brokers with TLS.")
    ca_secret: SecretRef | SkipJsonSchema[None] = Field(
        None,
        description="Secret key holding the CA certificate that signed the brokers' (Strimzi: "
        "<cluster>-cluster-ca-cert, key ca.crt); unset: the image's system CAs.",
    )


class KafkaSasl(Values):
    mechanism: Literal["", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = Field(
        "", description="SASL mechanism; empty: no SASL."
    )
    username: str = Field("", description="SASL user (Strimzi: the KafkaUser's name).")
    password: OptionalSecretValue = Field(
        default_factory=OptionalSecretValue,
        description="SASL password (Strimzi: the KafkaUser's Secret, key password).",
    )


class Kafka(Values):
    partitions: int = Field(6, ge=1, le=10_000, description="Awards partitions; caps processor replicas.")
    topic_prefix: str = Field("lb", pattern=r"^[a-zA-Z0-9._-]{1,100}$", description="Prefix of every topic.")
    replication_factor: int = Field(3, ge=1, description="Replication of created topics.")
    min_insync_replicas: int = Field(2, ge=1, description="min.insync.replicas of created topics.")
    tls: KafkaTls = Field(default_factory=KafkaTls)
    sasl: KafkaSasl = Field(default_factory=KafkaSasl)
    settings: dict[str, Any] = _settings_field("kafka")


class Redis(Values):
    url: str = Field(
        min_length=1, pattern=r"^rediss?://", description="This region's Redis, without a password."
    )
    password: OptionalSecretValue = Field(
        default_factory=OptionalSecretValue,
        description="Redis password, put into the URL at start (URL-safe characters only).",
    )
    settings: dict[str, Any] = _settings_field("redis")


class Cassandra(Values):
    contact_points: list[str] = Field(min_length=1, description="Cassandra nodes (host names or addresses).")
    port: int = Field(9042, ge=1, le=65535, description="CQL native port.")
    local_datacenter: str = Field(min_length=1, description="Data center of this region's nodes (required).")
    keyspace: str = Field("leaderboard", pattern=r"^[a-z][a-z0-9_]{0,47}$", description="Keyspace.")
    replication_factor: int = Field(3, ge=1, description="Keyspace replication.")
    username: str = Field("", description="User of password authentication (K8ssandra: <cluster>-superuser).")
    password: OptionalSecretValue = Field(
        default_factory=OptionalSecretValue, description="That user's password."
    )
    settings: dict[str, Any] = _settings_field("cassandra")


class Probe(Values):
    initial_delay_seconds: int = Field(0, ge=0)
    period_seconds: int = Field(10, ge=1)
    timeout_seconds: int = Field(3, ge=1)
    failure_threshold: int = Field(3, ge=1)


class Probes(Values):
    liveness: Probe = Field(default_factory=Probe, description="GET /healthz.")
    readiness: Probe = Field(default_factory=Probe, description="GET /readyz.")
    startup: Probe = Field(
        default_factory=lambda: Probe(period_seconds=5, failure_threshold=60),
        description="GET /healthz until the process is up.",
    )


class Pdb(Values):
    enabled: bool = Field(False, description="Render a PodDisruptionBudget.")
    max_unavailable: int = Field(1, ge=0, description="Pods that may be down at once.")


class Autoscaling(Values):
    enabled: bool = Field(False, description="Render a HorizontalPodAutoscaler (replaces replicas).")
    min_replicas: int = Field(2, ge=1)
    max_replicas: int = Field(10, ge=1)
    target_cpu_utilization: int = Field(70, ge=1, le=100, description="Average CPU percent of requests.")


class Service(Values):
    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = Field("ClusterIP")
    port: int = Field(ge=1, le=65535, description="Service port.")
    annotations: dict[str, str] = Field({})


class Component(Values):
    enabled: bool = Field(True, description="Render this component.")
    replicas: int = Field(1, ge=0, description="Pods.")
    container_port: int = Field(
        ge=1024, le=65535, description="Port of the process (and /healthz /readyz /metrics)."
    )
    service: Service
    resources: dict[str, Any] = Field({}, description="Container resources (requests, limits).")
    probes: Probes = Field(default_factory=Probes)
    node_selector: dict[str, str] = Field({})
    tolerations: list[dict[str, Any]] = Field([])
    affinity: dict[str, Any] = Field({})
    topology_spread_constraints: list[dict[str, Any]] = Field([])
    pod_annotations: dict[str, str] = Field({})
    pod_labels: dict[str, str] = Field({})
    pdb: Pdb = Field(default_factory=Pdb)
    extra_env: list[dict[str, Any]] = Field([], description="More env entries (not LB_*: those are refused).")


class Intake(Component):
    award_keys: AwardKeys = Field(description="Award HMAC keys.")
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    settings: dict[str, Any] = _settings_field("intake")


class Gateway(Component):
    admin_token: SecretValue = Field(description="Admin bearer token.")
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    settings: dict[str, Any] = _settings_field("gateway")


class Processor(Component):
    settings: dict[str, Any] = _settings_field("processor")


class Projector(Component):
    settings: dict[str, Any] = _settings_field("projector")


class Audit(Component):
    settings: dict[str, Any] = _settings_field("audit")


class Replicator(Component):
    settings: dict[str, Any] = _settings_field("replicator")


class ServiceMonitor(Values):
    enabled: bool = Field(False, description="Render a prometheus-operator ServiceMonitor.")
    labels: dict[str, str] = Field(
        {}, description="Labels Prometheus selects on (e.g. release: kube-prometheus-stack)."
    )
    interval: str = Field("30s", pattern=r"^[0-9]+(ms|s|m|h)$")


class Metrics(Values):
    service_monitor: ServiceMonitor = Field(default_factory=ServiceMonitor)


class KafkaTopics(Values):
    enabled: bool = Field(False, description="Render Strimzi KafkaTopic resources for the platform's topics.")
    cluster: str = Field("", description="strimzi.io/cluster label: the Kafka resource's name.")
    namespace: str = Field("", description="Namespace the topic operator watches (default: the release's).")


class Bootstrap(Values):
    enabled: bool = Field(
        True, description="Run the bootstrap (topics, CQL migrations) as a pre-install/pre-upgrade hook."
    )
    backoff_limit: int = Field(6, ge=0)
    active_deadline_seconds: int = Field(600, ge=30)
    resources: dict[str, Any] = Field({})


class ChartValues(Values):
    """Root of values.yaml."""

    global_: Global = Field(alias="global")
    mode: Literal["development", "production"] = Field(
        "production", description="LB_MODE: production refuses development secrets and single-copy storage."
    )
    name_override: str = Field("")
    fullname_override: str = Field("")
    image: Image = Field(default_factory=Image)
    service_account_name: str = Field(
        "", description="ServiceAccount of every pod (default: the namespace's)."
    )
    pod_security_context: dict[str, Any] = Field({})
    container_security_context: dict[str, Any] = Field({})
    common_labels: dict[str, str] = Field({})
    kafka: Kafka = Field(default_factory=Kafka)
    redis: Redis
    cassandra: Cassandra
    intake: Intake
    gateway: Gateway
    processor: Processor
    projector: Projector
    audit: Audit
    replicator: Replicator
    metrics: Metrics = Field(default_factory=Metrics)
    kafka_topics: KafkaTopics = Field(default_factory=KafkaTopics)
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)


def _without_titles(node: Any) -> Any:
    """Pydantic's generated titles repeat the key names; the descriptions say more."""
    if isinstance(node, dict):
        return {k: _without_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_without_titles(v) for v in node]
    return node


def values_schema() -> dict[str, Any]:
    schema = _without_titles(ChartValues.model_json_schema(by_alias=True))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def render() -> str:
    return json.dumps(values_schema(), indent=2, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if SCHEMA_PATH.read_text() != text:
            print(f"{SCHEMA_PATH} is stale: run .venv/bin/python helm/values_schema.py", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(text)
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
