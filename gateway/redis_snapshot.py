"""One board's state for the hints feed: top K and many players' ranks in one Redis round trip.

Its asOf comes with the windows from one read of :class:`regions.stores.redis.reads.RankReader`, so it
never claims more than they hold (stale when Redis lost the projection meanwhile).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.feed import BoardSnapshot
from gateway.core.updates import PlayerState
from regions.core.boards import Board
from regions.core.reads import Window, entries_of
from regions.stores.redis.reads import RankReader


class SnapshotReader:
    def __init__(self, reader: RankReader) -> None:
        self._reader = reader

    async def read(self, board: Board, users: Sequence[str], k: int) -> BoardSnapshot:
        as_of, top, windows = await self._reader.windows(board, users, k)
        top_entries = entries_of(board, top)
        players = {
            user: PlayerState() if window is None else _state(board, window)
            for user, window in zip(users, windows, strict=True)
        }
        return BoardSnapshot(as_of, tuple((e.user_id, e.score) for e in top_entries), players)


def _state(board: Board, window: Window) -> PlayerState:
    entry = entries_of(board, window)[window.rank - window.first]
    return PlayerState(entry.rank, entry.score, entry.version)
