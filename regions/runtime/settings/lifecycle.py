"""The lifecycle worker's section: closing boards, cutoff markers and archives."""

from __future__ import annotations

from pydantic import BaseModel, Field

from regions.runtime.settings.fields import HealthPort


class LifecycleSettings(BaseModel):
    health_port: HealthPort = 8089
    poll_interval_s: float = Field(
        2.0,
        gt=0,
        description="How often the lifecycle worker reads the catalog, moderation, corrections and erasure "
        "queue while work is in progress: a board or period closing, a correction, moderation action or "
        "erasure to write (about five Cassandra reads a pass, most of an idle region's Cassandra load).",
    )
    idle_poll_interval_s: float | None = Field(
        None,
        gt=0,
        description="How long the lifecycle worker waits after a pass that found no work in progress: a "
        "close, correction, moderation action or erasure asked meanwhile is taken up at most this much later, "
        "and other gateways learn a status change within gateway.board_cache_ttl_s. null: three times "
        "poll_interval_s. Never shorter than poll_interval_s.",
    )
    erasure_sweep_s: float = Field(
        300.0,
        gt=0,
        description="How often (and once at start) the lifecycle worker scans the recorded erasures for "
        "those asked in its region with work left and queued nowhere (the asking process died between "
        "recording and queuing one) and queues them. A scan reads every row of player_erasures.",
    )
    marker_delay_s: float | None = Field(
        None,
        ge=0,
        description="How long after a board began closing this region writes its cutoff markers; null: "
        "the intake catalog TTL plus the Kafka delivery timeout (or the intake's home delivery timeout, "
        "when longer), so every award an intake accepted before it saw CLOSING, here or routed here to a "
        "HOME_ROUTED board's home, has landed before the markers.",
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

    def pass_interval_s(self, busy: bool) -> float:
        """How long the worker waits before its next pass: ``busy``, the last one found work in progress."""
        if busy:
            return self.poll_interval_s
        idle = self.idle_poll_interval_s if self.idle_poll_interval_s is not None else 3 * self.poll_interval_s
        return max(self.poll_interval_s, idle)
