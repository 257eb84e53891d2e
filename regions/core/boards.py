"""Boards: their rules (aggregation, order, ties) and lifecycle status. Pure values."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from regions.core.approximate import ApproximateSpec, encode_approximate
from regions.core.ids import board_id_error
from regions.core.periods import WindowSpec, period_of
from regions.core.windows import decode_window
from schema.scoped import counted_of, counts_board_id, period_board_id, split_board_id

MAX_SHARDS = 64
"""The most shards a board may have: enough to spread one board over every master of a large Redis
Cluster, few enough that a read (one script call per shard) stays one round trip wide."""


class SortOrder(StrEnum):
    DESC = "DESC"
    ASC = "ASC"


class Aggregation(StrEnum):
    SUM = "SUM"
    MAX = "MAX"
    MIN = "MIN"
    LATEST = "LATEST"  # the score of the award that happened last (regions.core.latest)


class TiePolicy(StrEnum):
    USER_ID = "USER_ID"
    FIRST_REACHED = "FIRST_REACHED"


class Consistency(StrEnum):
    """Where a board's awards are accepted. REGIONAL: by the region that received them; HOME_ROUTED:
    always by the board's home region (an intake elsewhere produces them there and answers only once
    the home acknowledged), so an acknowledged award is in every HOME read whose asOf covers it."""

    REGIONAL = "REGIONAL"
    HOME_ROUTED = "HOME_ROUTED"


class BoardStatus(StrEnum):
    OPEN = "OPEN"
    CLOSING = "CLOSING"
    CLOSED = "CLOSED"


class InvalidBoardError(ValueError):
    """A board definition breaks a rule; the message names the field and the rule."""


@dataclass(frozen=True, slots=True)
class Board:
    id: str
    name: str
    home_region: str
    sort_order: SortOrder = SortOrder.DESC
    aggregation: Aggregation = Aggregation.SUM
    tie_policy: TiePolicy = TiePolicy.USER_ID
    window: str | None = None
    status: BoardStatus = BoardStatus.OPEN
    allow_negative: bool = False  # SUM boards only: whether an award may lower a total
    shards: int = 1  # players are spread over this many shards of the projection (1: one sorted set)
    consistency: Consistency = Consistency.REGIONAL
    # A CLOSED board's cutoffs, recorded when it closed: (``<region>:<partition>``, offset), sorted.
    cutoffs: tuple[tuple[str, int], ...] = ()
    # Approximate (trending): the best k kept by a Count-Min Sketch, no exact ranks (None: exact)
    approximate: ApproximateSpec | None = None

    def __post_init__(self) -> None:
        # a period of a board: see ``for_period``; an approximate board's companion: ``counts_board``
        base, period = split_board_id(counted_of(self.id))
        problem = board_id_error(base) if period != "" else "must not end with @"
        if problem is not None:
            raise InvalidBoardError(f"id {self.id!r}: {problem}")
        if not 1 <= len(self.name) <= 200:
            raise InvalidBoardError(f"name: must be 1..200 characters, got {len(self.name)}")
        if not 1 <= self.shards <= MAX_SHARDS:
            raise InvalidBoardError(f"shards: must be 1..{MAX_SHARDS}, got {self.shards}")
        if self.allow_negative and self.aggregation is not Aggregation.SUM:
            raise InvalidBoardError(
                f"allow_negative: only SUM boards take deltas; a {self.aggregation} board keeps any score"
            )
        if self.approximate is not None:
            self._check_approximate()

    def _check_approximate(self) -> None:
        """An approximate board counts positive deltas (a sketch only adds), keeps the largest counts
        and orders equal estimates by item id; it has no rolling window (a sketch cannot forget a day)."""
        if self.aggregation is not Aggregation.SUM:
            raise InvalidBoardError(f"approximate: only with aggregation SUM, not {self.aggregation}")
        if self.allow_negative:
            raise InvalidBoardError("approximate: a sketch counts positive deltas only, not allow_negative")
        if self.sort_order is not SortOrder.DESC:
            raise InvalidBoardError(
                "approximate: the sketch keeps the largest counts: sortOrder must be DESC"
            )
        if self.tie_policy is not TiePolicy.USER_ID:
            raise InvalidBoardError(
                "approximate: equal estimates are ordered by item id: tiePolicy must be USER_ID"
            )
        spec = decode_window(self.window)
        if spec is not None and spec.rolling:
            raise InvalidBoardError("approximate: not with a ROLLING window (a sketch cannot forget a day)")

    @property
    def counts_board(self) -> Board:
        """An approximate board's companion, whose members (one per partition) hold the partitions'
        counted totals (``schema.sketch``): what the error bound of a read is taken from."""
        return replace(self, id=counts_board_id(self.id), approximate=None, shards=1)

    @property
    def approximate_text(self) -> str:
        """The approximate settings as the catalog and the awards keep them (empty: exact)."""
        return encode_approximate(self.approximate)

    @property
    def window_spec(self) -> WindowSpec | None:
        """The board's time window; None for an all-time board. ``InvalidWindow`` for a window this
        release does not know (one a newer release stored): the board is read, its awards are not taken."""
        return decode_window(self.window)

    @property
    def base_id(self) -> str:
        """The catalog board this is (itself, or the board a period belongs to)."""
        return split_board_id(self.id)[0]

    @property
    def period_key(self) -> str | None:
        return split_board_id(self.id)[1]

    def for_period(self, key: str) -> Board:
        """The board under which period ``key`` is projected, closed and archived: ``<id>@<key>``,
        with this board's rules."""
        return replace(self, id=period_board_id(self.base_id, key))

    def counting(self, event_at_ms: int) -> Board:
        """The board an award happening at ``event_at_ms`` counts in (see ``counted_board_id``)."""
        board_id = counted_board_id(self.id, self.window_spec, event_at_ms)
        return self if board_id == self.id else replace(self, id=board_id)

    def accepting_region(self, serving_region: str) -> str:
        """The region whose awards topic takes this board's awards received by ``serving_region``:
        the home region for a HOME_ROUTED board, else the region that received them."""
        if self.consistency is Consistency.HOME_ROUTED:
            return self.home_region
        return serving_region

    @property
    def amount_field(self) -> str:
        """The award field this board reads: ``delta`` when summing, ``score`` for best-of and latest."""
        return "delta" if self.aggregation is Aggregation.SUM else "score"


def counted_board_id(board_id: str, spec: WindowSpec | None, event_at_ms: int) -> str:
    """The board id an award of ``board_id`` happening at ``event_at_ms`` is folded, projected and
    closed under: the period's own ``<board>@<key>`` on a calendar window; the board itself when
    all-time or rolling. ``InvalidWindow`` when the instant has no period in the window's rules."""
    if spec is None or spec.rolling:
        return board_id
    return period_board_id(board_id, period_of(spec, event_at_ms).key)
