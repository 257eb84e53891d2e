"""Which region's projection answers a read (HOME, REGIONAL), and a home region that does not answer
in time, with readers the test answers by hand (no sockets)."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from gateway.projections import HomeUnreachable, Projections
from regions.core.boards import Board
from regions.core.reads import AsOf, Scope
from regions.stores.redis.reads import RankReader


class HandReader:
    """Answers player_count with its region's name length, or hangs, or fails, as told."""

    def __init__(self, region: str) -> None:
        self.region = region
        self.calls = 0
        self.hang = False
        self.fail: Exception | None = None

    async def player_count(self, board: Board) -> int:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        if self.hang:
            await asyncio.Event().wait()
        return {"eu": 1, "us": 2}[self.region]

    async def as_of(self) -> AsOf:
        return AsOf(self.region, {}, None, False)


def projections(eu: HandReader, us: HandReader) -> Projections:
    """A gateway of region eu that reaches us's projection."""
    return Projections("eu", cast(RankReader, eu), 1.0, {"us": cast(RankReader, us)}, home_timeout_s=0.01)


EU_BOARD, US_BOARD = Board("home-eu", "Home eu", "eu"), Board("home-us", "Home us", "us")


async def test_home_reads_the_home_regions_projection_and_regional_this_ones() -> None:
    eu, us = HandReader("eu"), HandReader("us")
    p = projections(eu, us)
    assert await p.player_count(US_BOARD, Scope.HOME) == 2
    assert await p.player_count(US_BOARD, Scope.REGIONAL) == 1
    assert await p.player_count(EU_BOARD, Scope.HOME) == 1
    assert (eu.calls, us.calls) == (2, 1)


@pytest.mark.parametrize("fault", ["hang", "fail"])
async def test_a_home_region_that_does_not_answer_is_home_unreachable_and_regional_still_answers(
    fault: str,
) -> None:
    eu, us = HandReader("eu"), HandReader("us")
    us.hang = fault == "hang"
    us.fail = RedisConnectionError("refused") if fault == "fail" else None
    p = projections(eu, us)
    with pytest.raises(HomeUnreachable, match="home region 'us'"):
        await p.player_count(US_BOARD, Scope.HOME)
    assert await p.player_count(US_BOARD, Scope.REGIONAL) == 1


async def test_a_home_region_the_deployment_does_not_name_is_home_unreachable() -> None:
    p = projections(HandReader("eu"), HandReader("us"))
    with pytest.raises(HomeUnreachable, match="'ap'"):
        await p.player_count(Board("home-ap", "Home ap", "ap"), Scope.HOME)
    assert p.region_for(Board("home-ap", "Home ap", "ap"), Scope.REGIONAL) == "eu"
