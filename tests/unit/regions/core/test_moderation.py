"""The pure moderation rules: which states an action changes, and which periods it republishes."""

from __future__ import annotations

import pytest

from regions.core.boards import BoardStatus
from regions.core.moderation import republishes


@pytest.mark.parametrize(
    ("hidden", "status", "shown", "expected"),
    [
        (True, BoardStatus.CLOSED, True, True),  # a hide of a player in a closed period's result
        (True, BoardStatus.CLOSING, True, True),
        (True, BoardStatus.CLOSED, False, False),  # already hidden there (closed while hidden)
        (True, BoardStatus.CLOSED, None, False),  # no state of the player in that period
        (True, BoardStatus.OPEN, True, False),  # an open period takes the action in its close
        (True, None, True, False),
        (False, BoardStatus.CLOSED, False, True),  # a restore of a player hidden there
        (False, BoardStatus.CLOSED, True, False),
        (False, BoardStatus.CLOSED, None, False),
    ],
)
def test_a_period_is_republished_only_when_closing_or_closed_and_showing_the_player_otherwise(
    hidden: bool, status: BoardStatus | None, shown: bool | None, expected: bool
) -> None:
    assert republishes(hidden, status, shown) is expected
