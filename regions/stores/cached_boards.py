"""Board lookups on a hot path (the intake per award, the gateway per read), cached by the rule of
:mod:`regions.core.board_cache`: a board in steady use is refreshed in the background before its
answer expires, an expired answer is read again before it is served, unknown ids are remembered in
bounded number, and a catalog outage serves the last answer up to a hard bound; past it, or with no
answer at all, the lookup raises :class:`CatalogUnavailable`.

One catalog read per board at a time: lookups that need a board being read wait for that read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from regions.core.board_cache import BoardCache, Down, Hit
from regions.core.boards import Board
from regions.stores.cassandra.session import CASSANDRA_ERRORS

BoardLookup = Callable[[str], Awaitable[Board | None]]


class CatalogUnavailable(Exception):
    """The board catalog could not be read and no answer young enough to serve is cached."""


class CachedBoards:
    def __init__(
        self,
        lookup: BoardLookup,
        ttl_s: float,
        max_unknown: int,
        failed: Callable[[Exception], None],
        clock: Callable[[], float] = time.monotonic,
        *,
        max_stale_s: float = float("inf"),
    ) -> None:
        self._lookup = lookup  # the catalog read; raises one of CASSANDRA_ERRORS when it cannot answer
        self._cache = BoardCache(ttl_s, max_unknown, max_stale_s)
        self._failed = failed  # told of every failed catalog read, to count and log it
        self._clock = clock
        self._reads: dict[str, asyncio.Task[Hit | None]] = {}

    async def get(self, board_id: str) -> Board | None:
        found = self._cache.lookup(board_id, self._clock())
        if isinstance(found, Hit):
            if found.refresh:
                self._read(board_id)
            return found.board
        if isinstance(found, Down):
            raise CatalogUnavailable(board_id)
        # Shielded: a request that goes away does not cancel the read the others wait for.
        last = await asyncio.shield(self._read(board_id))
        if last is None:
            raise CatalogUnavailable(board_id)
        return last.board

    def _read(self, board_id: str) -> asyncio.Task[Hit | None]:
        """The catalog read of ``board_id`` under way, started if there is none."""
        task = self._reads.get(board_id)
        if task is None:
            task = asyncio.create_task(self._read_catalog(board_id))
            self._reads[board_id] = task
            task.add_done_callback(lambda _: self._reads.pop(board_id, None))
        return task

    async def _read_catalog(self, board_id: str) -> Hit | None:
        """Read the catalog into the cache; the answer to serve (None: nothing can be served)."""
        began = self._clock()
        try:
            board = await self._lookup(board_id)
        except CASSANDRA_ERRORS as exc:
            self._failed(exc)
            return self._cache.unreachable(board_id, self._clock())
        self._cache.answered(board_id, board, began)
        return Hit(board)

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
        """Stop the catalog reads under way."""
        for task in list(self._reads.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
