"""Admin mutations; each requires ``Authorization: Bearer <admin token>``."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import strawberry
from strawberry.types import Info

from gateway.api import fields, ids
from gateway.api.admin import admin_services
from gateway.api.context import Context
from gateway.api.corrections import Correction, PublishCorrectionInput
from gateway.api.erasure import ErasureMutation
from gateway.api.errors import AlreadyExists, InvalidInput, NotFound, StoreUnavailable
from gateway.api.leaderboard import Leaderboard
from gateway.api.moderation import ModerationMutation
from regions.actions.close import begin_close
from regions.actions.correct import record_correction
from regions.actions.home import ActionRefused
from regions.core import approximate, boards
from regions.core.boards import Aggregation, Consistency, SortOrder, TiePolicy
from regions.core.periods import DEFAULT_TIME_ZONE, InvalidWindow, Period, Weekday, WindowSpec
from regions.core.windows import encode_window

REGION = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


@strawberry.input
class WindowInput:
    period: Period
    days: int | None = strawberry.field(default=None, description="Only for ROLLING: 1..366 days.")
    time_zone: str | None = strawberry.field(
        default=None, description="IANA time zone of the window's days, e.g. Europe/Stockholm (default UTC)."
    )
    first_day_of_week: Weekday | None = strawberry.field(
        default=None, description="Only for WEEKLY: the day weeks start on (default MONDAY)."
    )

    def spec(self) -> WindowSpec:
        try:
            return WindowSpec(self.period, self.days, self.time_zone or DEFAULT_TIME_ZONE,
                              self.first_day_of_week)  # fmt: skip
        except InvalidWindow as exc:
            raise InvalidInput(f"input.{exc}") from exc


@strawberry.input(
    description="Keep the best k of a SUM board by a Count-Min Sketch: estimated scores, no exact ranks."
)
class ApproximateInput:
    k: int = strawberry.field(description=f"The most top(k) reads: 1..{approximate.MAX_K}.")
    epsilon: float = strawberry.field(
        description=f"An estimate exceeds the true count by at most epsilon x the board's total: (0, {approximate.MAX_EPSILON}]."
    )
    delta: float = strawberry.field(
        description=f"The probability that an estimate exceeds that bound: (0, {approximate.MAX_DELTA}]."
    )

    def spec(self) -> approximate.ApproximateSpec:
        try:
            return approximate.ApproximateSpec(self.k, self.epsilon, self.delta)
        except approximate.InvalidApproximate as exc:
            raise InvalidInput(f"input.{exc}") from exc


@strawberry.input
class CreateLeaderboardInput:
    id: strawberry.ID
    name: str
    home_region: str | None = strawberry.field(
        default=None, description="A region of the deployment; defaults to the serving region."
    )
    sort_order: SortOrder | None = SortOrder.DESC
    aggregation: Aggregation | None = Aggregation.SUM
    tie_policy: TiePolicy | None = TiePolicy.USER_ID
    window: WindowInput | None = strawberry.field(
        default=None,
        description="Absent: an all-time board. DAILY, WEEKLY and MONTHLY rank each period on its own and "
        "close it when it ends; ROLLING ranks the last `days` days.",
    )
    shards: int | None = strawberry.field(
        default=1,
        description=f"Spread the board's players over this many shards of the projection (1..{boards.MAX_SHARDS}), "
        "for a board hotter or larger than one Redis node serves well.",
    )
    consistency: Consistency | None = strawberry.field(
        default=Consistency.REGIONAL,
        description="REGIONAL: awards are accepted by the region that received them; HOME_ROUTED: by the "
        "home region only (read-your-write in HOME reads from any region, one more round trip per award "
        "sent outside the home).",
    )
    approximate: ApproximateInput | None = strawberry.field(
        default=None,
        description="A trending board of a huge item space (SUM only): memory fixed whatever the number of "
        "items, top(k) answers estimated scores with an error bound (and the exact score of the candidates "
        "it verified); player, context, entries and players are refused. Absent: an exact board.",
    )


def board_of(data: CreateLeaderboardInput, serving_region: str, regions: list[str]) -> boards.Board:
    """The board asked for; its home region must be one of the deployment's ``regions``."""
    home = data.home_region or serving_region
    if not REGION.match(home):
        raise InvalidInput(f"homeRegion {home!r}: must be 1..32 of a-z, 0-9 and -, starting with a letter")
    if home not in regions:
        raise InvalidInput(f"homeRegion {home!r}: must be a region of this deployment ({', '.join(regions)})")
    window = None if data.window is None else encode_window(data.window.spec())
    try:
        return boards.Board(
            id=ids.board_id("input.id", str(data.id)),
            name=data.name,
            home_region=home,
            sort_order=data.sort_order or SortOrder.DESC,
            aggregation=data.aggregation or Aggregation.SUM,
            tie_policy=data.tie_policy or TiePolicy.USER_ID,
            shards=1 if data.shards is None else data.shards,
            window=window,
            consistency=data.consistency or Consistency.REGIONAL,
            approximate=None if data.approximate is None else data.approximate.spec(),
        )
    except boards.InvalidBoardError as exc:
        raise InvalidInput(str(exc)) from exc


@strawberry.type
class Mutation(ModerationMutation, ErasureMutation):
    @fields.mutation("Create an open board (admin).")
    async def create_leaderboard(
        self, info: Info[Context, None], input: CreateLeaderboardInput
    ) -> Leaderboard:
        services = admin_services(info)
        board = board_of(input, services.settings.region, services.settings.region_names())
        if not await services.boards.create(board):
            raise AlreadyExists(f"leaderboard {board.id!r} already exists")
        return Leaderboard(board=board)

    @fields.mutation(
        "Begin closing a board (admin, in the board's home region): OPEN becomes CLOSING, and the board "
        "becomes CLOSED once every region's awards up to its cutoff are in the archived result "
        "(version 1). A board already CLOSING or CLOSED is answered as it is."
    )
    async def close_leaderboard(
        self, info: Info[Context, None], id: strawberry.ID, reason: str | None = None
    ) -> Leaderboard:
        services = admin_services(info)
        board_id = ids.board_id("id", str(id))
        try:
            record = await begin_close(services.cassandra.adapter.lifecycle, board_id, reason,
                                       region=services.settings.region, now=datetime.now(UTC))  # fmt: skip
        except ActionRefused as refused:
            raise (NotFound if refused.kind == "unknown" else InvalidInput)(str(refused)) from refused
        # This process's later reads answer CLOSING at once: its board cache and its whole answers.
        services.boards.learned(record.board)
        services.projections.changed(board_id)
        return Leaderboard(board=record.board)

    @fields.mutation(
        "Correct a CLOSED board's result (admin, in the board's home region): give some of its players "
        "a corrected final score. Recorded at once as the next result version (PENDING); the served "
        "standings change in every region and the version is archived (PUBLISHED), then subscribers "
        "get BoardStatusChanged. The same correctionId again answers the same correction. An approximate "
        "board's result holds estimates and takes no correction (BAD_USER_INPUT naming input.leaderboardId)."
    )
    async def publish_correction(
        self, info: Info[Context, None], input: PublishCorrectionInput
    ) -> Correction:
        services = admin_services(info)
        request = input.request(ids.board_id("input.leaderboardId", str(input.leaderboard_id)))
        stores = services.cassandra.adapter
        try:
            entry = await record_correction(
                stores.lifecycle, stores.corrections, services.projection, services.settings.redis.key_prefix,
                request, region=services.settings.region, now=datetime.now(UTC),
            )  # fmt: skip
        except ActionRefused as refused:
            error = {"unknown": NotFound, "conflict": AlreadyExists, "unavailable": StoreUnavailable}
            raise error.get(refused.kind, InvalidInput)(str(refused)) from refused
        return Correction.of(entry)
