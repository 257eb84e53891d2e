"""Output types, enums and inputs of the public schema (names are the contract of DESIGN 4.2)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum

import strawberry
from strawberry.types import Info

from gateway.api import fields
from gateway.api.context import Context
from gateway.api.scalars import Long
from gateway.profiles import UNAVAILABLE
from regions.cassandra_profiles import ProfileRecord
from regions.core import reads, windows
from regions.core.boards import Aggregation, BoardStatus, SortOrder, TiePolicy
from regions.core.reads import Scope

# The core's enums, exposed under the same (contract) names.
strawberry.enum(Scope, description="HOME: the board's canonical projection; REGIONAL: this region's.")
strawberry.enum(BoardStatus)
strawberry.enum(SortOrder)
strawberry.enum(Aggregation)
strawberry.enum(
    TiePolicy, description="USER_ID: equal scores by user id; FIRST_REACHED: by who reached it first."
)


@strawberry.enum(description="Fixed calendar periods (UTC) or a rolling number of days.")
class WindowPeriod(Enum):
    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    ROLLING = "ROLLING"


@strawberry.type
class BoardWindow:
    period: WindowPeriod
    days: int | None = strawberry.field(description="Length of a ROLLING window.")

    @staticmethod
    def of(stored: str | None) -> BoardWindow | None:
        spec = windows.decode_window(stored)
        return None if spec is None else BoardWindow(period=WindowPeriod(spec.period.value), days=spec.days)


@strawberry.type
class Position:
    region: str
    partition: int
    offset: Long


@strawberry.type(
    description="What a response reflects: every award accepted at or before each position is in it."
)
class AsOf:
    region: str
    positions: list[Position]
    newest_accepted_at: datetime | None
    stale: bool = strawberry.field(description="The projection is being rebuilt or lost its positions.")

    @staticmethod
    def of(as_of: reads.AsOf) -> AsOf:
        accepted = as_of.newest_accepted_ms
        return AsOf(
            region=as_of.region,
            positions=[
                Position(region=as_of.region, partition=p, offset=Long(o))
                for p, o in sorted(as_of.positions.items())
            ],
            newest_accepted_at=None if accepted is None else datetime.fromtimestamp(accepted / 1000, UTC),
            stale=as_of.stale,
        )


@strawberry.type
class Profile:
    user_id: strawberry.ID
    display_name: str
    country: str | None
    avatar_url: str | None

    @staticmethod
    def of(record: ProfileRecord) -> Profile:
        return Profile(
            user_id=strawberry.ID(record.user_id),
            display_name=record.display_name,
            country=record.country,
            avatar_url=record.avatar_url,
        )


@strawberry.type
class RankedPlayer:
    rank: int = strawberry.field(description="Ordinal rank, 1..N; no shared ranks.")
    user_id: strawberry.ID
    score: Long
    version: Long
    as_of: AsOf | None = strawberry.field(
        default=None,
        description="Set when the player was read on its own (Leaderboard.player); in a page, see its asOf.",
    )

    @fields.field(
        "Null when the player has no profile, or when the profile store is unavailable: then the "
        "response's extensions.warnings has a STORE_UNAVAILABLE entry."
    )
    async def profile(self, info: Info[Context, None]) -> Profile | None:
        record = await info.context.profiles.load(self.user_id)
        if record is UNAVAILABLE:
            info.context.store_unavailable("profiles")
            return None
        return None if record is None else Profile.of(record)

    @staticmethod
    def of(entry: reads.RankedEntry, as_of: AsOf | None = None) -> RankedPlayer:
        return RankedPlayer(
            rank=entry.rank,
            user_id=strawberry.ID(entry.user_id),
            score=Long(entry.score),
            version=Long(entry.version),
            as_of=as_of,
        )


@strawberry.type
class RankPage:
    entries: list[RankedPlayer]
    as_of: AsOf

    @staticmethod
    def of(page: reads.RankPage) -> RankPage:
        return RankPage(entries=[RankedPlayer.of(e) for e in page.entries], as_of=AsOf.of(page.as_of))


@strawberry.type
class PlayerContext:
    player: RankedPlayer
    above: list[RankedPlayer] = strawberry.field(description="Players ranked better, nearest last.")
    below: list[RankedPlayer] = strawberry.field(description="Players ranked worse, nearest first.")
    as_of: AsOf

    @staticmethod
    def of(context: reads.PlayerContext) -> PlayerContext:
        return PlayerContext(
            player=RankedPlayer.of(context.player),
            above=[RankedPlayer.of(e) for e in context.above],
            below=[RankedPlayer.of(e) for e in context.below],
            as_of=AsOf.of(context.as_of),
        )


@strawberry.type(description="An immutable archived result of a closed board (version 1 at close).")
class BoardResult:
    leaderboard_id: strawberry.ID
    version: int
    created_at: datetime | None
    reason: str | None
