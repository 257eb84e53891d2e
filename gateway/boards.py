"""Board definitions for reads, cached by the shared rule of :mod:`regions.core.board_cache`: reads
do not wait on Cassandra for a known board, unknown ids are remembered in bounded number, and a
catalog outage serves the last answer; with none, the caller gets ``CassandraUnavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Protocol

from gateway import metrics
from regions.cassandra_store import CASSANDRA_ERRORS, CassandraUnavailable
from regions.core.board_cache import BoardCache, Hit
from regions.core.boards import Board, BoardStatus
from regions.throttled_log import ThrottledLog

log = logging.getLogger(__name__)

UNAVAILABLE = "the board catalog (Cassandra) is unavailable; retry later"


class Catalog(Protocol):
    async def get(self, board_id: str) -> Board | None: ...
    async def all(self) -> list[Board]: ...
    async def create(self, board: Board) -> bool: ...


class BoardDirectory:
    def __init__(
        self,
        catalog: Callable[[], Catalog],
        ttl_s: float,
        max_unknown: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._catalog = catalog  # raises CassandraUnavailable until Cassandra was reached once
        self._cache = BoardCache(ttl_s, max_unknown)
        self._clock = clock
        self._refreshing: set[asyncio.Task[None]] = set()
        self._errors = ThrottledLog(log, interval_s=10.0, clock=clock)

    async def get(self, board_id: str) -> Board | None:
        found = self._cache.lookup(board_id, self._clock())
        if isinstance(found, Hit):
            if found.refresh:
                task = asyncio.create_task(self._refresh(board_id))
                self._refreshing.add(task)
                task.add_done_callback(self._refreshing.discard)
            return found.board
        try:
            board = await self._catalog().get(board_id)
        except CASSANDRA_ERRORS as exc:
            self._failed(exc)
            last = self._cache.unreachable(board_id, self._clock())
            if last is None:
                raise CassandraUnavailable(UNAVAILABLE) from exc
            return last.board
        self._cache.answered(board_id, board, self._clock())
        return board

    async def _refresh(self, board_id: str) -> None:
        try:
            board = await self._catalog().get(board_id)
        except CASSANDRA_ERRORS as exc:  # keep serving the known definition
            self._failed(exc)
            self._cache.unreachable(board_id, self._clock())
            return
        self._cache.answered(board_id, board, self._clock())

    def _failed(self, exc: Exception) -> None:
        metrics.STORE_ERRORS.labels("catalog").inc()
        self._errors.log(logging.WARNING, "catalog", "board catalog unavailable (%s)", exc)

    async def all(self, status: BoardStatus | None = None) -> list[Board]:
        try:
            boards = await self._catalog().all()
        except CASSANDRA_ERRORS as exc:
            self._failed(exc)
            raise CassandraUnavailable(UNAVAILABLE) from exc
        return sorted((b for b in boards if status is None or b.status is status), key=lambda b: b.id)

    async def create(self, board: Board) -> bool:
        """Create the board; False when one with this id exists."""
        try:
            created = await self._catalog().create(board)
        except CASSANDRA_ERRORS as exc:
            self._failed(exc)
            raise CassandraUnavailable(
                "the board catalog (Cassandra) is unavailable, so the board may or may not have been "
                "created; retry (a board that exists answers ALREADY_EXISTS)"
            ) from exc
        if created:
            self._cache.answered(board.id, board, self._clock())
        return created

    def unknown_ids(self) -> int:
        """Unknown board ids remembered now (bounded by ``gateway.max_unknown_boards``)."""
        return self._cache.unknown_ids()

    async def close(self) -> None:
        for task in list(self._refreshing):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
