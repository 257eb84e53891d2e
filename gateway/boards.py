"""Board definitions for reads, cached so reads do not wait on Cassandra.

A known board older than the TTL is still served while one background lookup refreshes it
(stale-while-revalidate): definitions change rarely, and a slow catalog must not slow reads.
Unknown ids are remembered only for the TTL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from regions.cassandra_catalog import CassandraCatalog
from regions.core.boards import Board, BoardStatus

log = logging.getLogger(__name__)


class BoardDirectory:
    def __init__(
        self, catalog: CassandraCatalog, ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._catalog = catalog
        self._ttl_s = ttl_s
        self._clock = clock
        self._known: dict[str, tuple[float, Board | None]] = {}
        self._refreshing: dict[str, asyncio.Task[None]] = {}

    async def get(self, board_id: str) -> Board | None:
        hit = self._known.get(board_id)
        now = self._clock()
        if hit is not None and now - hit[0] < self._ttl_s:
            return hit[1]
        if hit is not None and hit[1] is not None:
            if board_id not in self._refreshing:
                self._refreshing[board_id] = asyncio.create_task(self._refresh(board_id))
            return hit[1]
        board = await self._catalog.get(board_id)
        self._known[board_id] = (now, board)
        return board

    async def _refresh(self, board_id: str) -> None:
        try:
            board = await self._catalog.get(board_id)
            self._known[board_id] = (self._clock(), board)
        except Exception as exc:  # keep serving the known definition
            log.warning("refreshing board %s failed: %r", board_id, exc)
        finally:
            self._refreshing.pop(board_id, None)

    async def all(self, status: BoardStatus | None = None) -> list[Board]:
        boards = await self._catalog.all()
        return sorted((b for b in boards if status is None or b.status is status), key=lambda b: b.id)

    async def create(self, board: Board) -> bool:
        """Create the board; False when one with this id exists."""
        created = await self._catalog.create(board)
        if created:
            self._known[board.id] = (self._clock(), board)
        return created

    async def close(self) -> None:
        for task in list(self._refreshing.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
