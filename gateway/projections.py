"""Which projection answers a read, and the micro-cache of hot top-K answers.

``REGIONAL`` reads this region's projection. ``HOME`` reads the board's home region's canonical
projection: this region's own when the board is homed here, else the home region's Redis (its
``redis_url`` in ``settings.regions``), within ``gateway.home_timeout_s``; a home projection that
cannot be read in that time, or a home region the deployment does not name, is
:class:`HomeUnreachable` (``HOME_UNAVAILABLE`` to clients). ``asOf.region`` names the region whose
projection answered, so a response never claims to come from a projection it did not read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from redis.exceptions import RedisError

from gateway import metrics
from gateway.core.generations import BoardGenerations
from gateway.core.ttl_cache import TtlCache
from regions.core.boards import Board
from regions.core.paging import Page, PageRequest
from regions.core.reads import AsOf, PlayerContext, RankedEntry, RankPage, Scope
from regions.stores.redis.reads import RankReader

TopKey = tuple[str, str, int]  # region, board, k
T = TypeVar("T")


class HomeUnreachable(Exception):
    """A HOME read of a board homed in another region could not be answered; the message says why."""


def home_region_of(board: Board, scope: Scope, region: str, known: Mapping[str, object]) -> str:
    """The region whose projection answers a read of ``board`` in ``scope`` from ``region``;
    ``HomeUnreachable`` when the board's home region is none the deployment names (``known``)."""
    if scope is Scope.REGIONAL or board.home_region == region:
        return region
    if board.home_region not in known:
        raise HomeUnreachable(
            f"leaderboard {board.id!r} is homed in region {board.home_region!r}, which this deployment "
            f"does not reach; read it with scope: REGIONAL for region {region!r}'s projection"
        )
    return board.home_region


class Projections:
    def __init__(
        self,
        region: str,
        local: RankReader,
        top_ttl_s: float,
        homes: Mapping[str, RankReader] | None = None,
        home_timeout_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        max_changed_boards: int = 10_000,
    ) -> None:
        self._region = region
        self._readers = {**(homes or {}), region: local}
        self._home_timeout_s = home_timeout_s
        self._top: TtlCache[TopKey, tuple[int, RankPage]] = TtlCache(top_ttl_s, max_entries=4096)
        self._inflight: dict[TopKey, asyncio.Future[RankPage]] = {}
        # Bounded: period boards add a board id a day, for as long as the process runs.
        self._generations = BoardGenerations(max_changed_boards)
        self._clock = clock

    def generation(self, board_id: str) -> int:
        """The board's generation: a new one after each hint that said the board changed."""
        return self._generations.of(board_id)

    def changed(self, board_id: str) -> None:
        """A hint said the board changed: cached pages read before it are not served again."""
        self._generations.changed(board_id)

    def region_for(self, board: Board, scope: Scope) -> str:
        """The region whose projection answers (raises ``HomeUnreachable``)."""
        return home_region_of(board, scope, self._region, self._readers)

    async def _read(self, region: str, read: Callable[[RankReader], Awaitable[T]]) -> T:
        """Run a read on ``region``'s projection; another region's within the home timeout."""
        reader = self._readers[region]
        if region == self._region:
            return await read(reader)
        try:
            async with asyncio.timeout(self._home_timeout_s):
                return await read(reader)
        except (TimeoutError, RedisError, OSError) as exc:
            metrics.HOME_READ_FAILURES.labels(region).inc()
            raise HomeUnreachable(
                f"the projection of home region {region!r} did not answer within "
                f"{self._home_timeout_s:g} s ({type(exc).__name__}); retry, or read with scope: REGIONAL "
                f"for region {self._region!r}'s projection"
            ) from exc

    async def top(self, board: Board, k: int, scope: Scope) -> RankPage:
        """Top ``k``; a page read less than the cache's TTL ago, and since the board's last hint,
        is reused with its own asOf."""
        region = self.region_for(board, scope)
        key, generation = (region, board.id, k), self._generations.of(board.id)
        cached = self._top.get(key, self._clock())
        if cached is not None and cached[0] == generation:
            metrics.TOP_CACHE.labels("hit").inc()
            return cached[1]
        running = self._inflight.get(key)
        if running is not None:
            metrics.TOP_CACHE.labels("shared").inc()
            return await asyncio.shield(running)
        metrics.TOP_CACHE.labels("miss").inc()
        future = asyncio.ensure_future(self._read(region, lambda r: r.top(board, k)))
        self._inflight[key] = future
        try:
            page = await asyncio.shield(future)
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]
        if self._generations.of(board.id) == generation:
            self._top.put(key, (generation, page), self._clock())
        return page

    async def player(self, board: Board, user_id: str, scope: Scope) -> tuple[RankedEntry | None, AsOf]:
        return await self._read(self.region_for(board, scope), lambda r: r.player(board, user_id))

    async def context(self, board: Board, user_id: str, around: int, scope: Scope) -> PlayerContext | None:
        return await self._read(self.region_for(board, scope), lambda r: r.context(board, user_id, around))

    async def player_count(self, board: Board, scope: Scope = Scope.HOME) -> int:
        return await self._read(self.region_for(board, scope), lambda r: r.player_count(board))

    async def players(
        self, board: Board, user_ids: Sequence[str], scope: Scope
    ) -> tuple[dict[str, RankedEntry], AsOf]:
        return await self._read(self.region_for(board, scope), lambda r: r.players(board, user_ids))
    async def page(self, board: Board, request: PageRequest, scope: Scope) -> tuple[Page, AsOf]:
        return await self._read(self.region_for(board, scope), lambda r: r.page(board, request))
