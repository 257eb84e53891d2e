"""The projector's section: totals into the Redis projection under a write lease."""

from __future__ import annotations

from pydantic import BaseModel, Field

from regions.runtime.settings.fields import HealthPort, Niceness


class ProjectorSettings(BaseModel):
    max_batch: int = Field(5000, ge=1, description="Most totals applied per Redis round.")
    health_port: HealthPort = 8083
    niceness: Niceness = 0
    lease_ttl_s: float = Field(
        10.0,
        ge=1,
        description="Life of the projection's write lease, refreshed every third of it: a projector "
        "silent for longer is taken to be gone ('ops/lb rebuild' may then rebuild by itself).",
    )
