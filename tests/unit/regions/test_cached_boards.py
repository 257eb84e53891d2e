"""CachedBoards over an in-process catalog and a test clock: one catalog read per board at a time,
an expired answer read again before it is served, the outage bound."""

from __future__ import annotations

import asyncio

import pytest

from regions.core.boards import Board, BoardStatus
from regions.stores.cached_boards import CachedBoards, CatalogUnavailable
from regions.stores.cassandra.session import CassandraUnavailable

OPEN = Board("b1", "One", "local")
CLOSING = Board("b1", "One", "local", status=BoardStatus.CLOSING)


class Catalog:
    """The board catalog in memory; ``down`` makes every read fail, ``gate`` holds reads back."""

    def __init__(self) -> None:
        self.board = OPEN
        self.reads = 0
        self.down = False
        self.gate = asyncio.Event()
        self.gate.set()

    async def get(self, board_id: str) -> Board | None:
        self.reads += 1
        await self.gate.wait()
        if self.down:
            raise CassandraUnavailable("catalog down")
        return self.board if board_id == self.board.id else None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _boards(catalog: Catalog, clock: Clock, failures: list[Exception]) -> CachedBoards:
    return CachedBoards(catalog.get, 2.0, 10, failures.append, clock, max_stale_s=10.0)


async def test_a_board_closed_while_cached_is_answered_closing_on_the_first_lookup_past_the_ttl() -> None:
    catalog, clock, failures = Catalog(), Clock(), list[Exception]()
    boards = _boards(catalog, clock, failures)
    assert await boards.get("b1") == OPEN

    catalog.board = CLOSING
    clock.now += 2.0

    assert await boards.get("b1") == CLOSING
    assert catalog.reads == 2 and failures == []


async def test_lookups_waiting_for_an_expired_board_share_one_catalog_read() -> None:
    catalog, clock, failures = Catalog(), Clock(), list[Exception]()
    boards = _boards(catalog, clock, failures)
    await boards.get("b1")
    clock.now += 5.0
    catalog.gate.clear()

    waiting = [asyncio.create_task(boards.get("b1")) for _ in range(5)]
    await asyncio.sleep(0)
    waiting[0].cancel()  # a caller that goes away does not cancel the read the others wait for
    catalog.board = CLOSING
    catalog.gate.set()
    answers = await asyncio.gather(*waiting[1:])

    assert answers == [CLOSING] * 4 and catalog.reads == 2


async def test_an_outage_serves_the_last_answer_up_to_the_bound_then_fails() -> None:
    catalog, clock, failures = Catalog(), Clock(), list[Exception]()
    boards = _boards(catalog, clock, failures)
    await boards.get("b1")
    catalog.down = True

    clock.now += 3.0
    assert await boards.get("b1") == OPEN  # the read failed: the last answer, 3 s old
    clock.now += 7.0
    with pytest.raises(CatalogUnavailable):
        await boards.get("b1")  # 10 s old
    reads = catalog.reads
    with pytest.raises(CatalogUnavailable):
        await boards.get("b1")  # at once, without asking the catalog again
    assert catalog.reads == reads and len(failures) == reads - 1

    catalog.down = False
    clock.now += 2.0
    assert await boards.get("b1") == OPEN
    await boards.close()
