"""The audit sink's section: how fast and how kindly it writes the audit to Cassandra."""

from __future__ import annotations

from pydantic import BaseModel, Field

from regions.runtime.settings.fields import HealthPort, Niceness


class AuditSettings(BaseModel):
    max_rows_per_s: float = Field(
        0, ge=0, description="Cap on audit writes per second (0: none); peaks then queue in Kafka."
    )
    niceness: Niceness = 10  # the audit is eventual: behind folding and projection too
    batch_rows: int = Field(
        10,
        ge=1,
        le=100,
        description="Audit rows per unlogged batch, all of one replica set (1: a request per row); above "
        "10 Cassandra logs a warning per batch (unlogged_batch_across_partitions_warn_threshold).",
    )
    round_interval_ms: float = Field(
        250.0,
        ge=0,
        le=10_000,
        description="Least time from the start of a batch that found records to the start of the next: each "
        "batch takes every applied award fetched meanwhile (regions/runtime/cadence.py), so its Kafka commits "
        "and Cassandra round trips are shared by more rows. The audit is eventual: this only delays it.",
    )
    retry_initial_s: float = Field(0.2, gt=0, description="First retry delay after a Cassandra error.")
    retry_max_s: float = Field(10.0, gt=0, description="Longest retry delay.")
    health_port: HealthPort = 8084
