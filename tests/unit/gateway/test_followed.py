"""A subscription following several players: the board's updates once, each player's from its own
mailbox, a Resync once per sequence, in sequence order."""

from __future__ import annotations

from gateway.core.followed import FollowedMerge
from gateway.core.updates import RankChange, ResyncNeeded, ScoreUpdate, StatusChange, TopKChange
from regions.core.reads import AsOf

AS_OF = AsOf("local", {}, None, False)


def test_the_boards_updates_come_once_and_every_players_from_its_mailbox() -> None:
    top = [TopKChange("b", 10, 7, AS_OF), StatusChange("b", "CLOSING", None, 8)]
    ann = [ScoreUpdate("b", "ann", 5, 1, 2, 7, AS_OF), RankChange("b", "ann", 2, 1, 7, AS_OF)]
    bob = [ScoreUpdate("b", "bob", 3, 2, 4, 6, AS_OF)]

    merged = FollowedMerge().batch([(0, [*top, *ann]), (1, [*top, *bob])])

    assert merged == [bob[0], top[0], *ann, top[1]]


def test_a_resync_every_mailbox_got_is_passed_on_once_per_sequence() -> None:
    merge = FollowedMerge()
    gap = ResyncNeeded("b", "gap", 9)

    assert merge.batch([(0, [gap]), (1, [gap])]) == [gap]
    assert merge.batch([(2, [gap])]) == []
    later = ResyncNeeded("b", "slow_subscriber", 12)
    assert merge.batch([(1, [later])]) == [later]
