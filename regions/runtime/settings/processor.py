"""The processor's section: its group, dedupe memory and partition state stores."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from regions.runtime.settings.fields import HealthPort, Niceness


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
    round_interval_ms: float = Field(
        100.0,
        ge=0,
        le=5_000,
        description="Least time from the start of a round that found awards to the start of the next: a round "
        "takes every record fetched meanwhile, so the transactions a second stay bounded however high the "
        "rate and each carries more awards (regions/runtime/cadence.py). 0: a round as soon as the last one "
        "committed, unless busy_round_interval_ms stretches it.",
    )
    busy_round_interval_ms: float = Field(
        250.0,
        ge=0,
        le=5_000,
        description="How far the interval between rounds stretches while rounds take long (their transactions "
        "wait on busy brokers): the next round begins no sooner than four times the last one's length after "
        "it, up to this (regions/runtime/cadence.py). Adds at most this to freshness; below "
        "round_interval_ms: never stretched.",
    )
    idle_round_interval_ms: float = Field(
        1_000.0,
        ge=0,
        le=10_000,
        description="Longest a heartbeat waits in a partition that receives only heartbeats (an idle region): "
        "it is committed once every source's heartbeat has arrived, or once it has waited this long, so the "
        "regions' heartbeats share one transaction. Positions of an idle region advance up to this much later "
        "(keep it well below gateway.region_stale_after_s); awards are never held.",
    )
    commit_gap_ms: float = Field(
        5.0, ge=0, description="Least time between a commit and the next transaction (see processor loop)."
    )
    health_port: HealthPort = 8082
    niceness: Niceness = 0
    honour_cutoffs: bool = Field(
        True,
        description="Send awards after a closing board's cutoff to reconciliation (late). false only in "
        "tests, to see the close barrier's checker fail: late awards are then applied.",
    )

    @property
    def dedupe_retention_ms(self) -> int:
        """How far behind the slowest source, in acceptance time, a remembered copy is still kept."""
        return (self.dedupe_horizon_s + self.dedupe_retention_margin_s) * 1000
