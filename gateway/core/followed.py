"""One subscription that follows several players of a board, merged from one mailbox per player.
Pure: it sees the updates each mailbox drained.

Every mailbox gets the board's own updates (TopKChanged, BoardStatusChanged) besides its player's,
so they are taken from the first mailbox only, and a player's ScoreUpdated and RankChanged from its
own. A Resync (every mailbox gets the feed's) is passed on once per sequence. Updates drained
together are passed on in sequence order (the order of the board's rounds).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.updates import RankChange, ResyncNeeded, ScoreUpdate, Update


class FollowedMerge:
    def __init__(self) -> None:
        self._resynced: int | None = None  # the sequence of the last Resync passed on

    def batch(self, drained: Sequence[tuple[int, Sequence[Update]]]) -> list[Update]:
        """What to pass on of the (mailbox index, updates) drained together."""
        out: list[Update] = []
        for index, updates in drained:
            for update in updates:
                if isinstance(update, ResyncNeeded):
                    if update.sequence != self._resynced:
                        self._resynced = update.sequence
                        out.append(update)
                elif index == 0 or isinstance(update, ScoreUpdate | RankChange):
                    out.append(update)
        return sorted(out, key=lambda u: u.sequence)
