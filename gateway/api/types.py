"""Output types, enums and inputs of the public schema (names are the contract of DESIGN 4.2)."""

from __future__ import annotations

from datetime import UTC, datetime

import strawberry
from strawberry.types import Info
from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField

from gateway.api import fields
from gateway.api.context import Context
from gateway.api.errors import InvalidInput, LimitExceeded
from gateway.api.scalars import JSON, Long
from gateway.profiles import UNAVAILABLE
from regions.core import freshness, reads
from regions.core.boards import Aggregation, BoardStatus, Consistency, SortOrder, TiePolicy
from regions.core.candidates import Shown, shown
from regions.core.periods import Period, Weekday, WindowSpec
from regions.core.reads import Scope, top_percent
from regions.core.results import ResultEntry, holds_estimates, page, page_chunks, page_shared_ranks
from regions.stores.cassandra.profiles import ProfileRecord
from regions.stores.cassandra.results import ResultHeader

# The core's enums, exposed under the same (contract) names.
strawberry.enum(Scope, description="HOME: the board's canonical projection; REGIONAL: this region's.")
strawberry.enum(BoardStatus)
strawberry.enum(SortOrder)
strawberry.enum(
    Aggregation,
    description="SUM: awards carry a delta, added up; MAX/MIN: awards carry a score, the best counts; "
    "LATEST: awards carry a score, the one that happened last (occurredAt, then event id) counts.",
)
strawberry.enum(
    TiePolicy, description="USER_ID: equal scores by user id; FIRST_REACHED: by who reached it first."
)
strawberry.enum(
    Consistency,
    description="REGIONAL: each region accepts the board's awards itself; HOME_ROUTED: every region's "
    "intake routes them to the home region and answers only once it acknowledged, so an acknowledged "
    "award is in every HOME read whose asOf covers it (the home unreachable: 503 home_unavailable).",
)


strawberry.enum(Weekday, description="A day of the week.")


strawberry.enum(
    Period,
    name="WindowPeriod",
    description="Calendar periods in the board's time zone (each ranked on its own, closed when it ends) "
    "or a rolling number of days (one ranking of the last days).",
)


@strawberry.type
class BoardWindow:
    period: Period
    days: int | None = strawberry.field(description="Length of a ROLLING window.")
    time_zone: str = strawberry.field(description="IANA time zone whose calendar days the window follows.")
    first_day_of_week: Weekday | None = strawberry.field(
        description="WEEKLY: the day weeks start on (week keys name a week by the year of its fourth day)."
    )

    @staticmethod
    def of(spec: WindowSpec | None) -> BoardWindow | None:
        if spec is None:
            return None
        return BoardWindow(
            period=spec.period, days=spec.days, time_zone=spec.time_zone,
            first_day_of_week=spec.week_start if spec.period is Period.WEEKLY else None,
        )  # fmt: skip


@strawberry.type
class Position:
    region: str = strawberry.field(description="The region that accepted the awards (its awards topic).")
    partition: int
    offset: Long


def _time(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


@strawberry.type(description="How fresh the answering projection is for the awards one region accepted.")
class RegionStatus:
    region: str
    newest_accepted_at: datetime | None = strawberry.field(
        description="Acceptance time of the newest award of that region in the projection."
    )
    lag_seconds: float | None = strawberry.field(
        description="Time since the region's least advanced partition was last heard of (an award or "
        "its heartbeat, written every second); null when a partition never was."
    )
    stale: bool = strawberry.field(
        description="Nothing heard from the region within the threshold (default 5 s): it is cut off, "
        "silent or far behind, and its newest awards may be missing."
    )
    gap: bool = strawberry.field(
        description="Awards of that region were deleted before they could be replicated here: the "
        "positions pass them, yet they are missing."
    )

    @staticmethod
    def of(status: freshness.RegionStatus) -> RegionStatus:
        return RegionStatus(
            region=status.region,
            newest_accepted_at=_time(status.newest_accepted_ms),
            lag_seconds=status.lag_s,
            stale=status.stale,
            gap=status.gap,
        )


@strawberry.type(
    description="What a response reflects: every award accepted at or before each position is in it."
)
class AsOf:
    region: str = strawberry.field(description="The region whose projection answered.")
    positions: list[Position]
    newest_accepted_at: datetime | None
    stale: bool = strawberry.field(description="The projection is being rebuilt or lost its positions.")
    regions: list[RegionStatus] = strawberry.field(
        description="Freshness per region of the deployment (awards accepted there)."
    )

    @staticmethod
    def of(as_of: reads.AsOf) -> AsOf:
        return AsOf(
            region=as_of.region,
            positions=[
                Position(region=region, partition=p, offset=Long(o))
                for (region, p), o in sorted(as_of.positions.items())
            ],
            newest_accepted_at=_time(as_of.newest_accepted_ms),
            stale=as_of.stale,
            regions=[RegionStatus.of(s) for s in as_of.regions],
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
    rank: int = strawberry.field(description="Ordinal rank, 1..N, in the board's tie order.")
    user_id: strawberry.ID
    score: Long
    version: Long
    shared_rank: int = strawberry.field(
        description="Competition rank: 1 + the players with a strictly better score, whatever the "
        "tie policy (equal scores share it: 1, 1, 3). From the same read as rank."
    )
    top_percent: float = strawberry.field(
        description="100 * rank / the board's player count, both of the same read (the best of 200 "
        "players is in the top 0.5 %)."
    )
    metadata: JSON | None = strawberry.field(
        default=None,
        description="The metadata of the award that holds the score (MAX/MIN: the one that reached the "
        "best; SUM: the newest applied; LATEST: the latest); null when that award had none, and on an "
        "approximate board (whose scores are estimates: it keeps no award's metadata).",
    )
    as_of: AsOf | None = strawberry.field(
        default=None,
        description="Set when the player was read on its own (Leaderboard.player); in a page, see its asOf.",
    )
    verified: bool = strawberry.field(
        default=True,
        description="exactScore is the exact count: always on an exact board; on an approximate board, "
        "for a candidate whose every award was counted exactly since its first (the board's candidate "
        "list proves it never counted the item before it joined).",
    )
    exact_score: Long | None = strawberry.field(
        default=None,
        description="The exact score: on an exact board the score; on an approximate board a verified "
        "candidate's exact count (score stays its estimate, the order of the page), null when not verified.",
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
    def archived(
        rank: int, entry: ResultEntry, shared_rank: int, player_count: int, *, estimated: bool
    ) -> RankedPlayer:
        """An entry of an archived result of ``player_count`` players (``estimated``: an approximate
        board's, its score an estimate)."""
        return RankedPlayer.viewed(reads.RankedEntry(
            rank, entry.user_id, entry.score, entry.version, shared_rank, top_percent(rank, player_count),
        ), entry.shown(estimated=estimated))  # fmt: skip

    @staticmethod
    def of(entry: reads.RankedEntry, as_of: AsOf | None = None) -> RankedPlayer:
        """A player of an exact board."""
        return RankedPlayer.viewed(entry, shown(entry.score, entry.metadata, estimated=False), as_of)

    @staticmethod
    def candidate(entry: reads.RankedEntry) -> RankedPlayer:
        """An approximate board's candidate: ``score`` its estimate, with its verified count, if any
        (kept beside it in the projection, where an exact board keeps metadata)."""
        return RankedPlayer.viewed(entry, shown(entry.score, entry.metadata, estimated=True))

    @staticmethod
    def viewed(entry: reads.RankedEntry, view: Shown, as_of: AsOf | None = None) -> RankedPlayer:
        """An entry as ``view`` shows it (``regions.core.candidates.shown``)."""
        exact = view.exact_score
        return RankedPlayer(
            rank=entry.rank, user_id=strawberry.ID(entry.user_id), score=Long(entry.score),
            version=Long(entry.version), shared_rank=entry.shared_rank, top_percent=entry.top_percent,
            metadata=JSON(view.metadata) if view.metadata else None, as_of=as_of,
            verified=view.verified, exact_score=None if exact is None else Long(exact),
        )  # fmt: skip


@strawberry.type
class RankPage:
    entries: list[RankedPlayer]
    as_of: AsOf
    estimated: bool = strawberry.field(
        default=False,
        description="The scores are estimates (an approximate board): never below the true count, above it "
        "by at most errorBound (with the board's probability 1 - delta).",
    )
    error_bound: Long | None = strawberry.field(
        default=None,
        description="On an approximate board: epsilon x the board's counted total, the most an estimate "
        "exceeds its true count (with probability 1 - delta); null on an exact board.",
    )

    @staticmethod
    def of(page: reads.RankPage, error_bound: int | None = None) -> RankPage:
        of = RankedPlayer.of if error_bound is None else RankedPlayer.candidate
        return RankPage(
            entries=[of(e) for e in page.entries], as_of=AsOf.of(page.as_of),
            estimated=error_bound is not None, error_bound=None if error_bound is None else Long(error_bound),
        )  # fmt: skip


@strawberry.type(description="An approximate (trending) board's settings.")
class ApproximateSettings:
    k: int = strawberry.field(
        description="The most top(k) reads: the best k are kept (2k candidates per partition)."
    )
    epsilon: float = strawberry.field(
        description="An estimate exceeds the true count by at most epsilon x total..."
    )
    delta: float = strawberry.field(description="... with probability at least 1 - delta.")


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


@strawberry.type(
    description="An immutable archived result of a closed board (version 1 at close). An approximate "
    "(trending) board's is its final chart: its best k items as top(k) showed them, each score an "
    "estimate, with each item's verified count (verified, exactScore) and the estimates' errorBound then."
)
class BoardResult:
    header: strawberry.Private[ResultHeader]
    approximate: strawberry.Private[bool] = False  # the board's (a result archived before it kept its error bound)

    @strawberry.field
    def leaderboard_id(self) -> strawberry.ID:
        return strawberry.ID(self.header.board_id)

    @strawberry.field
    def version(self) -> int:
        return self.header.version

    @strawberry.field
    def created_at(self) -> datetime | None:
        return self.header.created_at

    @strawberry.field
    def reason(self) -> str | None:
        return self.header.reason

    @fields.field("Players in the result.")
    def player_count(self) -> Long:
        return Long(self.header.player_count)

    @fields.field(
        "The scores are estimates (an approximate board's result): never below the true count, above it "
        "by at most errorBound (with the board's probability 1 - delta)."
    )
    def estimated(self) -> bool:
        return self._estimated()

    def _estimated(self) -> bool:
        return holds_estimates(self.header.error_bound, self.approximate)

    @fields.field(
        "On an approximate board's result: epsilon x the board's counted total at the close, the most an "
        "estimate exceeds its true count (with probability 1 - delta); null on an exact board's result (and "
        "on an approximate board's archived before the bound was kept)."
    )
    def error_bound(self) -> Long | None:
        bound = self.header.error_bound
        return None if bound is None else Long(bound)

    @fields.field(
        "Ranks after+1 .. after+first of the result, in rank order; first is capped "
        "(gateway.max_top_k, default 100). sharedRank, when selected, costs a bounded search "
        "back to the start of the first entry's tie (a few chunk reads)."
    )
    async def entries(
        self, info: Info[Context, None], first: int | None = 100, after: int | None = 0
    ) -> list[RankedPlayer]:
        services = info.context.services
        first, after = 100 if first is None else first, after or 0
        problem = services.limits.check_k(first)
        if problem is not None:
            raise LimitExceeded(problem.replace("k must", "first must"))
        if after < 0:
            raise InvalidInput(f"after must be 0 or more, got {after}")
        h, results = self.header, services.cassandra.adapter.results
        numbers = page_chunks(after, first, h.chunk_size, h.player_count)
        chunks = await results.chunks(h.board_id, h.version, numbers)
        found = page(chunks, after, first, h.chunk_size)
        shared = [rank for rank, _ in found]
        if found and "sharedRank" in _selected(info):
            start = await results.tie_start(h, found[0][0], found[0][1].score, chunks)
            shared = page_shared_ranks(found, start)
        estimated = self._estimated()
        return [
            RankedPlayer.archived(rank, e, s, h.player_count, estimated=estimated)
            for (rank, e), s in zip(found, shared, strict=True)
        ]


def _selected(info: Info[Context, None]) -> set[str]:
    """The names of the fields selected on what the field returns (through fragments too)."""
    names: set[str] = set()
    pending = [s for field in info.selected_fields for s in field.selections]
    while pending:
        node = pending.pop()
        if isinstance(node, SelectedField):
            names.add(node.name)
        elif isinstance(node, FragmentSpread | InlineFragment):
            pending.extend(node.selections)
    return names
