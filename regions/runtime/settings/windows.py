"""Time windows' section, shared by the intakes, the lifecycle workers and the gateways."""

from __future__ import annotations

from pydantic import BaseModel, Field


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
