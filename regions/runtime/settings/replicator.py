"""The regions of a deployment and the replicator that copies another region's awards here."""

from __future__ import annotations

from pydantic import BaseModel, Field

from regions.runtime.settings.fields import HealthPort, Niceness


class RegionEndpoint(BaseModel):
    """How this region reaches another one (and itself)."""

    kafka_bootstrap_servers: str = Field(
        description="That region's Kafka brokers, host:port,... (the replicator reads its awards)."
    )
    redis_url: str | None = Field(
        None, description="That region's Redis projection (HOME reads of the boards homed there)."
    )


class ReplicatorSettings(BaseModel):
    source_region: str = Field(
        "",
        description="The region whose locally accepted awards this replicator copies here "
        "(one replicator process per remote region).",
    )
    health_port: HealthPort = Field(
        8085,
        description="Port of /healthz, /readyz and /metrics. A supervisor running every replicator of "
        "the region (ops/run) gives the one copying from the i-th region of `regions` this port + i.",
    )
    max_batch: int = Field(
        5000, ge=1, description="Most source records copied in one local transaction, with their checkpoints."
    )
    niceness: Niceness = 0
    round_interval_ms: float = Field(
        100.0,
        ge=0,
        le=5_000,
        description="Least time from the start of a copy transaction to the start of the next while the source "
        "has records: each transaction takes every record fetched meanwhile (regions/runtime/cadence.py). "
        "0: copy as soon as fetched, unless busy_round_interval_ms stretches it.",
    )
    busy_round_interval_ms: float = Field(
        250.0,
        ge=0,
        le=5_000,
        description="How far the interval between copy transactions stretches while they take long (busy "
        "brokers): the next begins no sooner than four times the last one's length after it, up to this "
        "(regions/runtime/cadence.py). Adds at most this to how soon another region's awards are seen here; "
        "below round_interval_ms: never stretched.",
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
