"""Board lookups on a hot path (the intake per award, the gateway per read), cached by the rule of
:mod:`regions.core.board_cache`: a known board is answered without waiting on the catalog and
refreshed in the background once stale, unknown ids are remembered in bounded number, and a catalog
outage serves the last answer; with none, the lookup raises :class:`CatalogUnavailable`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from regions.cassandra_store import CASSANDRA_ERRORS
from regions.core.board_cache import BoardCache, Hit
from regions.core.boards import Board

BoardLookup = Callable[[str], Awaitable[Board | None]]


class CatalogUnavailable(Exception):
    """The board catalog could not be read and no earlier answer is cached."""


class CachedBoards:
    def __init__(
        self,
        lookup: BoardLookup,
        ttl_s: float,
        max_unknown: int,
        failed: Callable[[Exception], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lookup = lookup  # the catalog read; raises one of CASSANDRA_ERRORS when it cannot answer
        self._cache = BoardCache(ttl_s, max_unknown)
        self._failed = failed  # told of every failed catalog read, to count and log it
        self._clock = clock
        self._refreshing: set[asyncio.Task[None]] = set()

    async def get(self, board_id: str) -> Board | None:
        found = self._cache.lookup(board_id, self._clock())
        if isinstance(found, Hit):
            if found.refresh:
                task = asyncio.create_task(self._refresh(board_id))
                self._refreshing.add(task)
                task.add_done_callback(self._refreshing.discard)
            return found.board
        try:
            board = await self._lookup(board_id)
        except CASSANDRA_ERRORS as exc:
            self._failed(exc)
            last = self._cache.unreachable(board_id, self._clock())
            if last is None:
                raise CatalogUnavailable(board_id) from exc
            return last.board
        self._cache.answered(board_id, board, self._clock())
        return board

    async def _refresh(self, board_id: str) -> None:
        try:
            board = await self._lookup(board_id)
        except CASSANDRA_ERRORS as exc:  # keep serving the known definition
            self._failed(exc)
            self._cache.unreachable(board_id, self._clock())
            return
        self._cache.answered(board_id, board, self._clock())

    def learned(self, board: Board) -> None:
        """``board`` was just created or changed here: answer it from now on without asking the catalog."""
        self._cache.answered(board.id, board, self._clock())

    def forget(self, board_id: str) -> None:
        """The board changed elsewhere: the next lookup asks the catalog."""
        self._cache.forget(board_id)

    def unknown_ids(self) -> int:
        """Unknown board ids remembered now (bounded by ``max_unknown``)."""
        return self._cache.unknown_ids()

    async def close(self) -> None:
        """Stop the background refreshes."""
        for task in list(self._refreshing):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
