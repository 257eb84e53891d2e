"""Board definitions for reads, cached by :class:`regions.stores.cached_boards.CachedBoards`: reads do not
wait on Cassandra for a known board, unknown ids are remembered in bounded number, and a catalog
outage serves the last answer; with none, the caller gets ``CassandraUnavailable``.

A board's status is told fresh: the process that closed a board answers it CLOSING from then on
(``learned``), and every process forgets a board when a status hint for it arrives (``forget``), so
others see the change within the lifecycle worker's poll, at worst within ``board_cache_ttl_s``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from gateway import metrics
from regions.core.boards import Board, BoardStatus
from regions.runtime.logs import ThrottledLog
from regions.stores.cached_boards import CachedBoards, CatalogUnavailable
from regions.stores.cassandra.session import CASSANDRA_ERRORS, CassandraUnavailable

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
        self._errors = ThrottledLog(log, interval_s=10.0, clock=clock)
        self._boards = CachedBoards(
            lambda board_id: self._catalog().get(board_id), ttl_s, max_unknown, self._failed, clock
        )

    async def get(self, board_id: str) -> Board | None:
        try:
            return await self._boards.get(board_id)
        except CatalogUnavailable as exc:
            raise CassandraUnavailable(UNAVAILABLE) from exc

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
            self._boards.learned(board)
        return created

    def learned(self, board: Board) -> None:
        """This process changed the board (closed it): later reads here answer it as it is now."""
        self._boards.learned(board)

    def forget(self, board_id: str) -> None:
        """A hint said the board's status changed: the next read here asks the catalog."""
        self._boards.forget(board_id)

    def unknown_ids(self) -> int:
        """Unknown board ids remembered now (bounded by ``gateway.max_unknown_boards``)."""
        return self._boards.unknown_ids()

    async def close(self) -> None:
        await self._boards.close()
