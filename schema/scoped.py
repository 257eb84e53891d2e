"""The board id under which one period of a windowed board is projected, closed and archived.

A period of board ``B`` is the board ``B@<period key>`` everywhere past the intake: in the awards'
state, the totals topic, the projection's keys and hints channel, cutoff markers and archived
results. Board ids cannot contain ``@``, so a scoped id never names a board of its own. Nor can
they contain ``#``: the companion ``<board>#counts`` of an approximate board (``schema.sketch``)
never names one either.
"""

from __future__ import annotations

SEPARATOR = "@"


def period_board_id(board_id: str, period_key: str) -> str:
    """The id of period ``period_key`` of board ``board_id``."""
    if SEPARATOR in board_id or not period_key:
        raise ValueError(f"cannot scope {board_id!r} to period {period_key!r}")
    return f"{board_id}{SEPARATOR}{period_key}"


def split_board_id(board_id: str) -> tuple[str, str | None]:
    """(board, period key) of a scoped id; (board, None) of a plain board id."""
    board, separator, key = board_id.partition(SEPARATOR)
    return (board, key) if separator else (board, None)


COUNTS_SUFFIX = "#counts"
"""Board ids cannot contain ``#``: the companion board of partition totals never names a board."""


def counts_board_id(board_id: str) -> str:
    """The companion board whose members (``p<partition>``) hold each partition's counted total."""
    return board_id + COUNTS_SUFFIX


def counted_of(board_id: str) -> str:
    """The board a companion board counts for (a board's own id otherwise)."""
    return board_id.removesuffix(COUNTS_SUFFIX)


def partition_member(partition: int) -> str:
    return f"p{partition}"
