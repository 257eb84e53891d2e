"""One board's state for the hints feed: top K and many players' ranks in one Redis round trip.

asOf is read first, as :class:`regions.reads.RankReader` does, so it never claims more than the
windows read after it hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from gateway.core.updates import PlayerState, TopSignature
from regions.core.boards import Board, TiePolicy
from regions.core.ordering import REACHED_WIDTH
from regions.reads import AsOf, RankReader, entries_of
from regions.redis_projection import Window, execute_pipeline
from schema.redis_keys import board_keys
from schema.resources import lua_script


@dataclass(frozen=True, slots=True)
class BoardSnapshot:
    as_of: AsOf
    top: TopSignature
    players: dict[str, PlayerState]


def _window(reply: Any) -> Window | None:
    if not reply:
        return None
    rows = [(reply[i], reply[i + 1]) for i in range(3, len(reply), 2)]
    return Window(int(reply[0]), int(reply[1]), int(reply[2]), rows)


class SnapshotReader:
    def __init__(self, redis: Redis, key_prefix: str, reader: RankReader) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self._reader = reader
        self._script = redis.register_script(lua_script("read_window"))

    async def read(self, board: Board, users: Sequence[str], k: int) -> BoardSnapshot:
        as_of = await self._reader.as_of()
        keys = board_keys(self._prefix, board.id)
        strip = REACHED_WIDTH + 1 if board.tie_policy is TiePolicy.FIRST_REACHED else 0
        pipe = self._redis.pipeline(transaction=False)
        await self._script(keys=[keys.ranking, keys.records], args=["", k, strip], client=pipe)
        for user in users:
            await self._script(keys=[keys.ranking, keys.records], args=[user, 0, strip], client=pipe)
        replies = await execute_pipeline(pipe)
        top = _window(replies[0])
        top_entries = [] if top is None else entries_of(board, top)
        players = {}
        for user, reply in zip(users, replies[1:], strict=True):
            window = _window(reply)
            players[user] = PlayerState() if window is None else _state(board, window)
        return BoardSnapshot(as_of, tuple((e.user_id, e.score) for e in top_entries), players)


def _state(board: Board, window: Window) -> PlayerState:
    entry = entries_of(board, window)[window.rank - window.first]
    return PlayerState(entry.rank, entry.score, entry.version)
