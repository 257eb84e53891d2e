"""How every process reaches the stores: the Kafka brokers, the Redis projection, Cassandra."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, SecretStr


class KafkaSecurity(StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


PLAINTEXT_KAFKA = frozenset({KafkaSecurity.PLAINTEXT, KafkaSecurity.SASL_PLAINTEXT})


class SaslMechanism(StrEnum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


#: Partitions a platform topic may have: past this, a topic is a misconfiguration, not a deployment.
MAX_PARTITIONS = 10_000


class KafkaSettings(BaseModel):
    bootstrap_servers: str = Field("127.0.0.1:9092", description="Kafka brokers, host:port,...")
    topic_prefix: str = Field("lb", description="Prefix of every topic this deployment owns.")
    partitions: int = Field(
        6,
        ge=1,
        le=MAX_PARTITIONS,
        description="Partitions of every platform topic, and at most this many processor instances work a "
        "region; each partition is a task with a transaction per round, so a region on one machine "
        "runs best on few (ops/run uses 1). Topics made with another count are refused.",
    )
    replication_factor: int = Field(1, ge=1, description="Replication of created topics (3 in production).")
    min_insync_replicas: int = Field(1, ge=1, description="min.insync.replicas of topics (2 in production).")
    request_timeout_ms: int = Field(10_000, ge=100, description="Producer request timeout.")
    delivery_timeout_s: float = Field(15.0, gt=0, description="Longest wait for an ack before 503.")
    transaction_timeout_ms: int = Field(60_000, ge=1000, description="Processor transaction timeout.")
    linger_ms: int = Field(
        5,
        ge=0,
        description="Producer batching delay: concurrent single-award requests share a produce request "
        "(fewer requests cost the intake and the brokers less CPU, for a few ms of acknowledgement latency).",
    )
    fetch_wait_ms: int = Field(
        50,
        ge=0,
        le=1_000,
        description="How long the projector's fetch waits at the broker for a full response (fetch.max.wait.ms, "
        "with fetch.min.bytes of fetch_min_bytes) before answering with what it has: while totals flow, it asks "
        "about 1000 / this many times a second instead of once per record batch. Adds at most this to "
        "freshness; 0: answer at once. The processor, replicator and audit sink wait as long as their round "
        "interval, the most they wait anyway. While a stream is idle, quiet_fetch_wait_ms applies instead.",
    )
    quiet_fetch_wait_ms: int = Field(
        1_000,
        ge=100,
        le=10_000,
        description="How long a live consumer's fetch waits at the broker once its stream has carried nothing "
        "but heartbeats and watermarks for this long; such a fetch is answered by the first record that lands, "
        "so an idle stream costs a fetch per heartbeat or per this wait, and the first award after it is read "
        "at once.",
    )
    fetch_min_bytes: int = Field(
        262_144,
        ge=1,
        description="Bytes a live consumer's fetch waits for (up to fetch_wait_ms): a backlog is read at full "
        "speed, a trickle once per wait.",
    )
    raw_retention_ms: int = Field(
        604_800_000,
        ge=60_000,
        description="retention.ms of the raw topics the platform creates (awards, replicated awards, applied, "
        "reconciliation): how long they keep an award, an erased player's included (default 7 days).",
    )
    max_compaction_lag_ms: int = Field(
        604_800_000,
        ge=60_000,
        description="max.compaction.lag.ms of the compacted topics it creates (totals, dedupe, checkpoints): a "
        "record replaced or deleted (an erased player's state) is compacted away within this (default 7 days).",
    )
    tombstone_retention_ms: int = Field(
        86_400_000,
        ge=0,
        description="delete.retention.ms of those compacted topics: how long a tombstone itself stays after "
        "compaction (default 1 day).",
    )
    security_protocol: KafkaSecurity = Field(
        KafkaSecurity.PLAINTEXT, description="How every client connects to the brokers (TLS, SASL)."
    )
    ssl_cafile: str = Field(
        "", description="CA certificates that signed the brokers' (SSL, SASL_SSL); empty: the system's."
    )
    sasl_mechanism: SaslMechanism = Field(
        SaslMechanism.SCRAM_SHA_512, description="SASL mechanism (SASL_PLAINTEXT, SASL_SSL)."
    )
    sasl_username: str = Field("", description="SASL user (SASL_PLAINTEXT, SASL_SSL).")
    sasl_password: SecretStr = Field(SecretStr(""), description="SASL password (SASL_PLAINTEXT, SASL_SSL).")
    allow_plaintext_in_private_network: bool = Field(
        False,
        description="Production mode: let the clients reach the brokers without TLS (PLAINTEXT, "
        "SASL_PLAINTEXT), for brokers inside a private network only; every process warns at start.",
    )

    def topic(self, name: str) -> str:
        """Full name of one of the platform's topics (``awards``, ``totals``, ``reconciliation``)."""
        return f"{self.topic_prefix}.{name}.v1"


class RedisSettings(BaseModel):
    url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Redis holding the ranking projection: redis://host:port/db (rediss:// with TLS), or "
        "a Redis Cluster through any of its nodes: redis+cluster://host:port (rediss+cluster://).",
    )
    key_prefix: str = Field("lb", description="Prefix of every Redis key this deployment owns.")
    allow_no_password_in_private_network: bool = Field(
        False,
        description="Production mode: accept a Redis URL without a password, for a Redis inside a private "
        "network only; every process warns at start.",
    )


class CassandraSettings(BaseModel):
    contact_points: list[str] = Field(["127.0.0.1"], description="Cassandra nodes.")
    port: int = Field(9042, description="CQL native port.")
    keyspace: str = Field("leaderboard", pattern=r"^[a-z][a-z0-9_]{0,47}$", description="Keyspace.")
    replication_factor: int = Field(
        1,
        ge=1,
        description="Replicas in the local data center when `datacenters` is empty (3 in production).",
    )
    datacenters: dict[str, int] = Field(
        {},
        description="Replicas of the keyspace per data center (NetworkTopologyStrategy), one data center "
        'per region, e.g. {"eu-west": 3, "us-east": 3}; empty: `replication_factor` in `local_dc` alone.',
    )
    local_dc: str = Field(
        "datacenter1",
        description="This region's data center: requests go there, at LOCAL_QUORUM (LOCAL_SERIAL for "
        "conditional writes); the board catalog's creations are SERIAL, across data centers.",
    )
    request_timeout_s: float = Field(5.0, gt=0, description="Per-request timeout.")
    username: str = Field("", description="User of password authentication; empty: none.")
    password: SecretStr = Field(SecretStr(""), description="Password of that user.")
    allow_no_auth_in_private_network: bool = Field(
        False,
        description="Production mode: connect without password authentication (no username), for a "
        "Cassandra inside a private network only; every process warns at start.",
    )
