"""Telling subscribers of a board's lifecycle: a ``status`` hint on the board's hints channel of this
region's projection when the board begins closing, closes, or gets a new result version.

Every region's lifecycle worker announces to its own projection's subscribers (HOME subscribers in
other regions follow the home region's channel), whoever changed the catalog. What was last announced
per board is kept in Redis next to the projection: a hint is published, then recorded, so a crash in
between announces it once more (a repeat, never a miss). Its sequence is the board's next hint
sequence, taken on the counter the projector's hints use, so it never goes backwards among them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import cast

from regions.core.boards import BoardStatus
from regions.core.lifecycle import announced_state
from regions.stores.cassandra.lifecycle import CloseRecord
from regions.stores.redis.projection import RedisProjection
from schema.hints import status_hint
from schema.redis_keys import announced_key

log = logging.getLogger(__name__)


class StatusAnnouncer:
    def __init__(self, projection: RedisProjection, prefix: str) -> None:
        self._projection = projection
        self._key = announced_key(prefix)

    async def announce(self, records: Iterable[CloseRecord]) -> int:
        """Announce every board whose lifecycle changed since last announced here; returns how many."""
        redis = self._projection.redis
        told = cast(dict[str, str], await redis.hgetall(self._key))
        count = 0
        for record in records:
            board = record.board
            version = record.result_version if board.status is BoardStatus.CLOSED else None
            state = announced_state(board.status, version)
            if state is None or told.get(board.id) == state:
                continue
            sequence = await self._projection.next_hint_sequence(board.id)
            await self._projection.publish_hint(
                board.id, status_hint(board.id, sequence, board.status, version)
            )
            await redis.hset(self._key, board.id, state)
            log.info("%s: announced %s (hint sequence %d)", board.id, state, sequence)
            count += 1
        return count
