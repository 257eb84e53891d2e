"""Boards: their rules (aggregation, order, ties) and lifecycle status. Pure values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class SortOrder(StrEnum):
    DESC = "DESC"
    ASC = "ASC"


class Aggregation(StrEnum):
    SUM = "SUM"
    MAX = "MAX"
    MIN = "MIN"


class TiePolicy(StrEnum):
    USER_ID = "USER_ID"
    FIRST_REACHED = "FIRST_REACHED"


class BoardStatus(StrEnum):
    OPEN = "OPEN"
    CLOSING = "CLOSING"
    CLOSED = "CLOSED"


BOARD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


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

    def __post_init__(self) -> None:
        if not BOARD_ID.match(self.id):
            raise InvalidBoardError(
                f"id {self.id!r}: must be 1..128 of letters, digits and . _ : -, starting alphanumeric"
            )
        if not 1 <= len(self.name) <= 200:
            raise InvalidBoardError(f"name: must be 1..200 characters, got {len(self.name)}")

    @property
    def amount_field(self) -> str:
        """The award field this board reads: ``delta`` when summing, ``score`` for best-of."""
        return "delta" if self.aggregation is Aggregation.SUM else "score"
