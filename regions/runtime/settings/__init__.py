"""The one settings object of every service: environment variables with the ``LB_`` prefix.

Nested sections use a double underscore: ``LB_KAFKA__BOOTSTRAP_SERVERS``, ``LB_INTAKE__PORT``.
Each ``__main__`` loads it once with :func:`load_settings` and passes it down. Defaults work on a
developer machine; ``LB_MODE=production`` refuses the development secrets, single-copy storage, the
switches for tests (``TEST_ONLY``) and stores reached without protection (unless a store's opt-out
says it is inside a private network).
An ``LB_*`` variable that names no setting is refused, so a typo in a deployment is caught at start;
``LB_OPS_*`` variables belong to the ops scripts and are not settings.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping
from enum import StrEnum
from typing import Literal, Self, get_origin
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from regions.core.redaction import mask_url
from regions.runtime.redacted_logs import protect_logs

DEV_AWARD_KEY_ID = "dev"
DEV_AWARD_SECRET = "dev-secret"
DEV_ADMIN_TOKEN = "dev-admin-token"


class Mode(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


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


class UnsafeSettingsError(ValueError):
    """Production mode was asked to run with a development default."""


class UnknownSettingsError(ValueError):
    """The environment holds ``LB_*`` variables that name no setting."""


OPS_PREFIX = "LB_OPS_"

#: Switches for tests only, by (section, field), with what they would break: production mode refuses
#: any value but the default, and the chart offers none of them.
TEST_ONLY: dict[tuple[str, str], str] = {
    ("processor", "fault_forget_event_ids"): "repeats would be counted again",
    ("processor", "honour_cutoffs"): "awards after a closing board's cutoff would be applied",
    ("lifecycle", "fault_chunk_pause_ms"): "every archive would pause after each round of chunk writes",
    ("windows", "clock_offset_s"): "periods would roll over at the wrong time",
}


class KafkaSettings(BaseModel):
    bootstrap_servers: str = Field("127.0.0.1:9092", description="Kafka brokers, host:port,...")
    topic_prefix: str = Field("lb", description="Prefix of every topic this deployment owns.")
    partitions: int = Field(6, ge=1, description="Partitions of the awards and totals topics.")
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


class IntakeSettings(BaseModel):
    host: str = Field("127.0.0.1", description="Listen address.")
    port: int = Field(8081, description="Listen port of POST /internal/awards.")
    award_keys: dict[str, SecretStr] = Field(
        {DEV_AWARD_KEY_ID: SecretStr(DEV_AWARD_SECRET)},
        description="HMAC secrets per key id (JSON object).",
    )
    max_clock_skew_s: int = Field(300, ge=1, description="Accepted |now - X-Award-Timestamp|.")
    max_batch: int = Field(500, ge=1, description="Most awards in one request.")
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Largest request body.")
    rate_per_key: float = Field(
        20_000,
        gt=0,
        description="Awards per second per key id, held by each intake pod on its own (not across the "
        "region): N intake replicas accept up to N times this from one key id.",
    )
    burst_per_key: float = Field(
        40_000, gt=0, description="Burst of awards per key id, per intake pod like rate_per_key."
    )
    catalog_ttl_s: float = Field(
        2.0,
        ge=0,
        description="How long a board lookup is served without reading the catalog again: an intake "
        "refuses a closing board's awards at most this long after the close began.",
    )
    catalog_max_stale_s: float = Field(
        30.0,
        ge=0,
        description="While the catalog cannot be read, how long after its last answer a board is still "
        "served from that answer (at least catalog_ttl_s); then the board's awards get 503 "
        "store_unavailable until it is read again.",
    )
    max_unknown_boards: int = Field(
        10_000,
        ge=1,
        description="Unknown board ids remembered (the least recently asked is forgotten first).",
    )
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Intake processes sharing the port (SO_REUSEPORT), one Kafka producer each; the "
        "award rate per key is shared among them (each process allows rate_per_key / workers).",
    )
    heartbeat_interval_s: float = Field(
        1.0,
        gt=0,
        description="How often a heartbeat is written to every awards partition, so positions advance while "
        "the region is idle and a silent region is told apart (keep well below gateway.region_stale_after_s).",
    )


class ProcessorSettings(BaseModel):
    session_timeout_ms: int = Field(
        10_000,
        ge=6_000,
        description="How long the group waits for a silent instance before its partitions move to the others.",
    )
    dedupe_horizon_s: int = Field(
        86_400,
        ge=1,
        description="A repeat of an event id accepted within this many seconds of the remembered copy is "
        "never applied (however busy the player).",
    )
    fault_forget_event_ids: bool = Field(
        False,
        description="Fault injection, for tests only: remember no event id, so every repeat counts again "
        "(the negative control that shows a convergence check failing); production mode refuses it.",
    )
    dedupe_retention_margin_s: int = Field(
        21_600,
        ge=1,
        description="How much longer than the horizon an event id is remembered, in stream time: a copy is "
        "forgotten once every source (this region's awards and each other region's) has read awards or "
        "heartbeats accepted horizon + margin after it, however long that takes (a cut or an outage only "
        "holds the memory back). The margin covers clocks that differ between one region's intakes: an "
        "award accepted more than this before its own source's newest goes to reconciliation "
        "(beyond_dedupe_memory) instead of risking a double count.",
    )
    store: Literal["rocksdb", "memory"] = Field(
        "rocksdb",
        description="Where partition state lives: on disk (restarts restore only the changelog's tail) "
        "or in memory (every takeover restores the whole partition).",
    )
    store_dir: str = Field(
        ".data/processor",
        description="Directory of the on-disk state: a subdirectory per topic prefix, region and partition.",
    )
    store_cache_mib: int = Field(
        256, ge=8, description="Block cache shared by every partition's store in one process (bounds RSS)."
    )
    store_write_buffer_mib: int = Field(
        64, ge=4, description="Write buffers of all stores in one process, charged to the block cache."
    )
    max_batch: int = Field(
        2000, ge=1, description="Most awards read in one round (one transaction per partition)."
    )
    commit_gap_ms: float = Field(
        5.0, ge=0, description="Least time between a commit and the next transaction (see processor loop)."
    )
    health_port: int = Field(8082, description="Port of /healthz, /readyz and /metrics.")
    honour_cutoffs: bool = Field(
        True,
        description="Send awards after a closing board's cutoff to reconciliation (late). false only in "
        "tests, to see the close barrier's checker fail: late awards are then applied.",
    )

    @property
    def dedupe_retention_ms(self) -> int:
        """How far behind the slowest source, in acceptance time, a remembered copy is still kept."""
        return (self.dedupe_horizon_s + self.dedupe_retention_margin_s) * 1000


class ProjectorSettings(BaseModel):
    max_batch: int = Field(5000, ge=1, description="Most totals applied per Redis round.")
    health_port: int = Field(8083, description="Port of /healthz, /readyz and /metrics.")
    lease_ttl_s: float = Field(
        10.0,
        ge=1,
        description="Life of the projection's write lease, refreshed every third of it: a projector "
        "silent for longer is taken to be gone ('ops/lb rebuild' may then rebuild by itself).",
    )


class AuditSettings(BaseModel):
    max_rows_per_s: float = Field(
        0, ge=0, description="Cap on audit writes per second (0: none); peaks then queue in Kafka."
    )
    niceness: int = Field(
        10,
        ge=0,
        le=19,
        description="CPU niceness the sink adds to itself: the audit is eventual, so on a shared host a "
        "peak slows it rather than acceptance and ranking (0: same priority as the rest).",
    )
    batch_rows: int = Field(
        10,
        ge=1,
        le=100,
        description="Audit rows per unlogged batch, all of one replica set (1: a request per row); above "
        "10 Cassandra logs a warning per batch (unlogged_batch_across_partitions_warn_threshold).",
    )
    retry_initial_s: float = Field(0.2, gt=0, description="First retry delay after a Cassandra error.")
    retry_max_s: float = Field(10.0, gt=0, description="Longest retry delay.")
    health_port: int = Field(8084, description="Port of /healthz, /readyz and /metrics.")


class RegionEndpoint(BaseModel):
    """How this region reaches another one (and itself)."""

    kafka_bootstrap_servers: str = Field(
        description="That region's Kafka brokers, host:port,... (the replicator reads its awards)."
    )
    redis_url: str | None = Field(
        None, description="That region's Redis projection (HOME reads of the boards homed there)."
    )


class LifecycleSettings(BaseModel):
    health_port: int = Field(8089, description="Port of /healthz, /readyz and /metrics.")
    poll_interval_s: float = Field(
        1.0, gt=0, description="How often the lifecycle worker reads the catalog for closing boards."
    )
    marker_delay_s: float | None = Field(
        None,
        ge=0,
        description="How long after a board began closing this region writes its cutoff markers; null: "
        "the intake catalog TTL plus the Kafka delivery timeout, so every award an intake accepted "
        "before it saw CLOSING has landed before the markers.",
    )
    chunk_size: int = Field(
        10_000, ge=1, le=100_000, description="Ranked entries per archived result chunk (one Cassandra row)."
    )
    fault_chunk_pause_ms: float = Field(
        0.0,
        ge=0,
        description="A pause after each round of chunk writes of an archive: a fault for tests, which kill "
        "the worker mid-archive; 0 (none) otherwise.",
    )


class WindowsSettings(BaseModel):
    """Time windows (daily, weekly, monthly and rolling boards); see README, Time windows."""

    grace_s: float = Field(
        300.0,
        ge=0,
        description="How long after a period ends its awards are still accepted: the home region begins "
        "closing the period (its cutoff markers, then the archive) once this has passed.",
    )
    max_future_s: float = Field(
        300.0,
        ge=0,
        description="How far ahead of the intake's clock an award's occurredAt may be (game servers' "
        "clocks drift); later is refused.",
    )
    clock_offset_s: float = Field(
        0.0,
        description="For tests only: added to the wall clock wherever time windows read it (the intake's "
        "occurredAt rules, the lifecycle worker's rollovers and expiries, the gateway's current period), "
        "so a test can reach a period's end; production mode refuses any other value than 0.",
    )

    def now_ms(self, wall_s: float) -> int:
        """The time windows go by, from the wall clock's ``wall_s``."""
        return int((wall_s + self.clock_offset_s) * 1000)


class ReplicatorSettings(BaseModel):
    source_region: str = Field(
        "",
        description="The region whose locally accepted awards this replicator copies here "
        "(one replicator process per remote region).",
    )
    health_port: int = Field(
        8085,
        description="Port of /healthz, /readyz and /metrics. A supervisor running every replicator of "
        "the region (ops/run) gives the one copying from the i-th region of `regions` this port + i.",
    )
    max_batch: int = Field(
        5000, ge=1, description="Most source records copied in one local transaction, with their checkpoints."
    )
    lag_interval_s: float = Field(
        1.0, gt=0, description="How often the source's offsets are read for the lag metrics."
    )
    source_timeout_ms: int = Field(
        10_000, ge=1000, description="Request timeout towards the source region's brokers."
    )
    source_retry_max_s: float = Field(
        10.0, gt=0, description="Longest wait before reconnecting to an unreachable source region."
    )


class GatewaySettings(BaseModel):
    host: str = Field("127.0.0.1", description="Listen address.")
    port: int = Field(8080, description="Listen port of /graphql.")
    admin_token: SecretStr = Field(
        SecretStr(DEV_ADMIN_TOKEN),
        description="Admin bearer token; during a rotation the new and the old token, separated by a comma "
        "(either is accepted).",
    )
    allowed_origins: list[str] = Field(
        [],
        description="Origins (scheme://host[:port]) allowed by CORS and WebSocket handshakes; same origin always is.",
    )
    max_top_k: int = Field(100, ge=1, le=1000, description="Largest k of top(k); over it is an error.")
    max_context_range: int = Field(
        50, ge=0, le=500, description="Largest range of context(); over it is an error."
    )
    max_query_depth: int = Field(8, ge=2, description="Deepest selection an operation may have.")
    max_query_tokens: int = Field(2000, ge=50, description="Most tokens in one GraphQL document.")
    max_aliases: int = Field(15, ge=1, description="Most aliases in one GraphQL document.")
    max_body_bytes: int = Field(
        65_536,
        ge=1024,
        description="Largest HTTP request body; over it is 413, refused before it is all read.",
    )
    max_ws_message_bytes: int = Field(
        65_536, ge=1024, description="Largest WebSocket message; over it the connection is closed (1009)."
    )
    max_query_cost: int = Field(
        5000,
        ge=1,
        description="Cost budget of one operation, counted before it runs (see gateway/core/cost.py: "
        "top(k: 100) with profiles costs about 500); over it is a COST_LIMIT_EXCEEDED error.",
    )
    max_listed_boards: int = Field(
        100, ge=1, description="Bound on the boards `leaderboards` returns, as the query cost counts it."
    )
    max_introspection_depth: int = Field(
        15, ge=2, description="Deepest nesting of an introspection query (the standard one is 14)."
    )
    introspection: bool | None = Field(
        None, description="Answer introspection queries; unset: on in development, off in production."
    )
    graphiql: bool = Field(
        False,
        description="Serve the GraphiQL page on GET /graphql from a browser (it loads its scripts from a CDN).",
    )
    top_cache_ttl_s: float = Field(
        0.5, ge=0, le=1, description="How long a top-K answer is reused (0: never)."
    )
    answer_cache_bytes: int = Field(
        16 << 20,
        ge=0,
        description="Memory for whole answers reused within top_cache_ttl_s (keys and bodies).",
    )
    board_cache_ttl_s: float = Field(2.0, ge=0, description="How long a board definition is reused.")
    max_unknown_boards: int = Field(
        10_000,
        ge=1,
        description="Unknown board ids remembered (the least recently asked is forgotten first).",
    )
    profile_timeout_s: float = Field(
        0.25,
        gt=0,
        description="How long a read waits for its batched profile lookup (the lookup itself goes on "
        "and fills the profile cache).",
    )
    profile_cache_ttl_s: float = Field(
        5.0, ge=0, description="How long a profile (or its absence) is reused by later reads (0: never)."
    )
    profile_cache_entries: int = Field(50_000, ge=1, description="Most profiles the gateway keeps in memory.")
    profile_breaker_failures: int = Field(
        3, ge=1, description="Failed lookups in a row that open the breaker."
    )
    profile_breaker_reset_s: float = Field(5.0, gt=0, description="How long an open breaker skips profiles.")
    connection_init_timeout_s: float = Field(10.0, gt=0, description="WebSocket connection_init deadline.")
    shutdown_grace_s: int = Field(
        10,
        ge=1,
        description="On shutdown, how long open requests and WebSockets may take to finish before they are "
        "cancelled: a client that stopped reading never completes its close handshake. Keep it under the "
        "pod's terminationGracePeriodSeconds (30).",
    )
    max_subscriptions_per_connection: int = Field(
        20, ge=1, description="Subscriptions one WebSocket may hold."
    )
    hint_min_interval_s: float = Field(
        0.05, ge=0, description="Shortest gap between two reads of one board's changes."
    )
    resync_after_coalesced: int = Field(
        32, ge=1, description="Undelivered updates a subscriber may have overwritten before it gets a Resync."
    )
    hints_ping_interval_s: float = Field(
        5.0,
        gt=0,
        description="A hints feed that heard nothing this long is sent a PING; one that then hears "
        "nothing for as long again is reconnected (its subscribers get a Resync). A partition that "
        "outlasts the server's patience drops the connection without a word reaching this side.",
    )
    max_tracked_players: int = Field(
        5000, ge=1, description="Distinct subscribed players per board and process (more are refused)."
    )
    redis_max_connections: int = Field(64, ge=2, description="Redis connections of one gateway process.")
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Gateway processes sharing the port (SO_REUSEPORT); each has its own caches.",
    )
    planned_reads: bool = Field(
        True,
        description="Run query documents answered once before by a compiled plan instead of the generic "
        "executor (same answers; see gateway/api/plans.py).",
    )
    persisted_query_entries: int = Field(
        1024,
        ge=1,
        description="Automatic persisted queries remembered per process (least recently used out).",
    )
    region_stale_after_s: float = Field(
        5.0,
        gt=0,
        description="A region not heard of (no award, no heartbeat) in a projection for longer than this is "
        "`stale` in asOf.regions.",
    )
    home_timeout_s: float = Field(
        1.0,
        gt=0,
        description="Longest wait for another region's projection (HOME reads of boards homed there); "
        "past it the read fails with HOME_UNAVAILABLE.",
    )

    def admin_tokens(self) -> list[str]:
        """Every accepted admin token (two during a rotation); none when the token is empty."""
        value = self.admin_token.get_secret_value()
        return [token.strip() for token in value.split(",")] if value else []

    @model_validator(mode="after")
    def _one_token_per_comma(self) -> Self:
        if not all(self.admin_tokens()):
            raise ValueError("admin_token: empty token; give one token, or two separated by a comma")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LB_", env_nested_delimiter="__", extra="ignore")

    mode: Mode = Field(
        Mode.DEVELOPMENT, description="production refuses development secrets and single-copy storage."
    )
    region: str = Field("local", pattern=r"^[a-z][a-z0-9-]{0,31}$", description="This region's name.")
    regions: dict[str, RegionEndpoint] = Field(
        {},
        description="Every region of the deployment by name, this one included (JSON object); "
        "empty: this region alone.",
    )
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    cassandra: CassandraSettings = Field(default_factory=CassandraSettings)
    intake: IntakeSettings = Field(default_factory=IntakeSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    processor: ProcessorSettings = Field(default_factory=ProcessorSettings)
    projector: ProjectorSettings = Field(default_factory=ProjectorSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    replicator: ReplicatorSettings = Field(default_factory=ReplicatorSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    windows: WindowsSettings = Field(default_factory=WindowsSettings)

    @property
    def marker_delay_ms(self) -> int:
        """How long a region waits after CLOSING before it writes its cutoff markers."""
        delay = self.lifecycle.marker_delay_s
        if delay is None:
            delay = self.intake.catalog_ttl_s + self.kafka.delivery_timeout_s
        return int(delay * 1000)

    def region_names(self) -> list[str]:
        """Every region of the deployment by name (this one alone when ``regions`` is empty)."""
        return sorted({*self.regions, self.region})

    def remote_regions(self) -> list[str]:
        """The other regions of the deployment, by name: those whose awards are replicated here."""
        return sorted(name for name in self.regions if name != self.region)

    def secret_values(self) -> set[str]:
        """Every secret these settings hold (secret fields, each admin token, the passwords in Redis
        URLs): what ``regions.core.redaction.redact`` keeps out of output and logs."""
        found = set(self.gateway.admin_tokens())
        for section in (getattr(self, name) for name in type(self).model_fields):
            values = section.values() if isinstance(section, dict) else [section]
            for model in (v for v in values if isinstance(v, BaseModel)):
                for value in (getattr(model, name) for name in type(model).model_fields):
                    inner = value.values() if isinstance(value, dict) else [value]
                    found |= {v.get_secret_value() for v in inner if isinstance(v, SecretStr)}
        for url in [self.redis.url, *(r.redis_url for r in self.regions.values() if r.redis_url)]:
            password = urlsplit(url).password
            if password:
                found |= {password, unquote(password)}
        found.discard("")
        return found

    def missing_secrets(self, service: str) -> list[str]:
        """The secret settings ``service`` works with that were not given (production has no defaults)."""
        needed = {"intake": ("LB_INTAKE__AWARD_KEYS", bool(self.intake.award_keys)),
                  "gateway": ("LB_GATEWAY__ADMIN_TOKEN", bool(self.gateway.admin_tokens()))}  # fmt: skip
        name, given = needed.get(service, ("", True))
        return [] if given else [name]

    def private_network_warnings(self) -> list[str]:
        """What production mode lets through because an opt-out says the store is in a private network."""
        if self.mode is not Mode.PRODUCTION:
            return []
        k, r, c = self.kafka, self.redis, self.cassandra
        return [text for on, text in (
            (k.allow_plaintext_in_private_network, f"LB_KAFKA__ALLOW_PLAINTEXT_IN_PRIVATE_NETWORK is set: Kafka "
             f"is reached with {k.security_protocol}, awards cross the network unencrypted"),
            (r.allow_no_password_in_private_network, "LB_REDIS__ALLOW_NO_PASSWORD_IN_PRIVATE_NETWORK is set: "
             "anyone who reaches Redis can rewrite the projection"),
            (c.allow_no_auth_in_private_network, "LB_CASSANDRA__ALLOW_NO_AUTH_IN_PRIVATE_NETWORK is set: anyone "
             "who reaches Cassandra can rewrite the catalog, audit and archives"),
        ) if on]  # fmt: skip

    def _without_development_secrets(self) -> None:
        """Production: a secret that was not given is none, never the development one."""
        if "award_keys" not in self.intake.model_fields_set:
            self.intake.award_keys = {}
        if "admin_token" not in self.gateway.model_fields_set:
            self.gateway.admin_token = SecretStr("")

    def _test_switches(self) -> list[str]:
        """Production problems: every test-only switch (``TEST_ONLY``) that is not at its default."""
        problems = []
        for (section, name), breaks in TEST_ONLY.items():
            model = getattr(self, section)
            value, default = getattr(model, name), type(model).model_fields[name].default
            if value != default:
                shown = str(value).lower() if isinstance(value, bool) else value
                problems.append(
                    f"LB_{section.upper()}__{name.upper()} is {shown}: {breaks} (a switch for tests only)"
                )
        return problems

    def _unprotected_stores(self) -> list[str]:
        """Production problems: a store reached without encryption or authentication, unless its
        opt-out says it is inside a private network."""
        problems = []
        k, r, c = self.kafka, self.redis, self.cassandra
        if k.security_protocol in PLAINTEXT_KAFKA and not k.allow_plaintext_in_private_network:
            problems.append(
                f"LB_KAFKA__SECURITY_PROTOCOL is {k.security_protocol}: awards and credentials would cross "
                "the network unencrypted (use SSL or SASL_SSL; for brokers inside a private network, set "
                "LB_KAFKA__ALLOW_PLAINTEXT_IN_PRIVATE_NETWORK=true)"
            )
        # An unset URL is a process that does not use Redis (the chart gives it to those that do).
        if (
            "url" in r.model_fields_set
            and not urlsplit(r.url).password
            and not r.allow_no_password_in_private_network
        ):
            problems.append(
                f"LB_REDIS__URL {mask_url(r.url)} has no password: anyone who reaches it could rewrite the "
                "projection (redis://:PASSWORD@host...; for a Redis inside a private network, set "
                "LB_REDIS__ALLOW_NO_PASSWORD_IN_PRIVATE_NETWORK=true)"
            )
        if not c.username and not c.allow_no_auth_in_private_network:
            problems.append(
                "LB_CASSANDRA__USERNAME is empty: Cassandra would be used without authentication (set "
                "LB_CASSANDRA__USERNAME and LB_CASSANDRA__PASSWORD; for a Cassandra inside a private "
                "network, set LB_CASSANDRA__ALLOW_NO_AUTH_IN_PRIVATE_NETWORK=true)"
            )
        return problems

    @model_validator(mode="after")
    def _refuse_unsafe_production(self) -> Self:
        if self.mode is not Mode.PRODUCTION:
            return self
        self._without_development_secrets()
        problems = [*self._test_switches(), *self._unprotected_stores()]
        if any(s.get_secret_value() == DEV_AWARD_SECRET for s in self.intake.award_keys.values()):
            problems.append("LB_INTAKE__AWARD_KEYS still holds the development secret")
        if DEV_ADMIN_TOKEN in self.gateway.admin_tokens():
            problems.append("LB_GATEWAY__ADMIN_TOKEN is the development token")
        k = self.kafka
        if k.replication_factor < 3:
            problems.append(
                f"LB_KAFKA__REPLICATION_FACTOR is {k.replication_factor}: an acknowledged award must survive "
                "the loss of a broker (use 3)"
            )
        if not 2 <= k.min_insync_replicas < k.replication_factor:
            problems.append(
                f"LB_KAFKA__MIN_INSYNC_REPLICAS is {k.min_insync_replicas}: it must be at least 2, so an "
                "acknowledgement means two copies, and below the replication factor, so one broker may be down"
            )
        c = self.cassandra
        for dc, replicas in c.datacenters.items() or [(c.local_dc, c.replication_factor)]:
            if replicas < 3:
                setting = "LB_CASSANDRA__DATACENTERS" if c.datacenters else "LB_CASSANDRA__REPLICATION_FACTOR"
                problems.append(
                    f"{setting} gives data center {dc} {replicas} replicas: the catalog, audit and archives "
                    "need 3 in every data center"
                )
        if problems:
            raise UnsafeSettingsError(
                "production mode refuses unsafe settings: "
                + "; ".join(problems)
                + ". Set them in the environment (see README, Settings)."
            )
        return self


def _variables(model: type[BaseModel], prefix: str) -> tuple[set[str], set[str]]:
    """The variable names of a model's fields, and the prefixes of fields that take named entries
    (a mapping, or a section set field by field)."""
    names: set[str] = set()
    open_prefixes: set[str] = set()
    for name, info in model.model_fields.items():
        full = f"{prefix}{name.upper()}"
        names.add(full)
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            inner_names, inner_prefixes = _variables(kind, full + "__")
            names |= inner_names
            open_prefixes |= inner_prefixes
        elif get_origin(kind) is dict:
            open_prefixes.add(full + "__")
    return names, open_prefixes


def check_environment(environ: Mapping[str, str]) -> None:
    """Refuse ``LB_*`` variables that name no setting (names are case-insensitive, like the
    settings themselves); ``LB_OPS_*`` belong to the ops scripts and are let through."""
    names, open_prefixes = _variables(Settings, "LB_")
    unknown = sorted(
        variable
        for variable in (n.upper() for n in environ)
        if variable.startswith("LB_")
        and not variable.startswith(OPS_PREFIX)
        and variable not in names
        and not variable.startswith(tuple(open_prefixes))
    )
    if not unknown:
        return
    described = []
    for variable in unknown:
        close = difflib.get_close_matches(variable, names, n=1)
        described.append(f"{variable} (did you mean {close[0]}?)" if close else variable)
    raise UnknownSettingsError(
        f"unknown LB_* environment variables: {', '.join(described)}. Every LB_* variable is a setting "
        f"(see README, Settings); only {OPS_PREFIX}* variables, read by the ops scripts, are not. "
        f"Known settings: {', '.join(sorted(names))}"
    )


def describe_refusal(exc: Exception) -> str:
    """Why settings were refused, for a message: what was wrong with which setting, never the value
    given (pydantic's own text repeats every input, secrets included)."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    return "; ".join(
        f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"].removeprefix("Value error, ")
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    )


def load_settings(service: str | None = None) -> Settings:
    """Read the settings from the environment; call once per process, in ``__main__``. Raises
    ``UnknownSettingsError`` for an ``LB_*`` variable that names no setting, and
    ``UnsafeSettingsError`` when production mode gives ``service`` none of a secret it works with.
    From then on the process's logs mask every secret the settings hold, and the private-network
    opt-outs in use are logged as warnings."""
    check_environment(os.environ)
    settings = Settings()
    protect_logs(settings.secret_values())
    missing = settings.missing_secrets(service) if service and settings.mode is Mode.PRODUCTION else []
    if missing:
        raise UnsafeSettingsError(
            f"production mode: the {service} needs {', '.join(missing)}, which is not set"
        )
    for warning in settings.private_network_warnings():
        logging.getLogger("regions.runtime.settings").warning("UNSAFE IN PRODUCTION: %s", warning)
    return settings
