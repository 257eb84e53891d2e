"""Where the intake produces each award: its accepting region's awards topic (``AwardEvent.region``),
this region's, or for a HOME_ROUTED board received outside its home, the home region's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import msgspec

from regions.core.boards import Board, Consistency
from regions.runtime.metrics import INTAKE_HOME_AWARDS
from regions.stores.kafka.home import HomeUnavailable
from schema.records import AwardEvent, totals_key

Publish = Callable[[list[tuple[bytes, bytes]]], Awaitable[list[tuple[int, int]]]]
"""Produce (key, value) records into this region's awards topic: their (partition, offset)."""
HomePublish = Callable[[str, list[tuple[bytes, bytes]]], Awaitable[list[tuple[int, int]]]]
"""Produce into another region's awards topic (a HOME_ROUTED board's home); ``HomeUnavailable``."""


def _records(events: list[AwardEvent]) -> list[tuple[bytes, bytes]]:
    encode = msgspec.msgpack.encode
    return [(totals_key(e.board_id, e.user_id), encode(e)) for e in events]


class AwardRouter:
    def __init__(self, region: str, publish: Publish, home: HomePublish | None) -> None:
        self._region, self._publish, self._home = region, publish, home

    async def produce(self, events: list[AwardEvent], boards: dict[str, Board]) -> list[tuple[int, int]]:
        """Each award's (partition, offset) in its accepting region's awards topic, once every award
        of the request was acknowledged there; else the first failure (the home's first: only the
        home can take those awards). A request of REGIONAL boards is one produce, as it always was."""
        local = self._region
        if all(b.consistency is Consistency.REGIONAL or b.home_region == local for b in boards.values()):
            return await self._publish(_records(events))
        by_region: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            by_region.setdefault(e.region, []).append(i)
        answers = await asyncio.gather(
            *(self._publish_to(region, _records([events[i] for i in indices]))
              for region, indices in by_region.items()),
            return_exceptions=True,
        )  # fmt: skip
        positions: list[tuple[int, int]] = [(0, 0)] * len(events)
        failed: list[BaseException] = []
        for indices, found in zip(by_region.values(), answers, strict=True):
            if isinstance(found, BaseException):
                failed.append(found)
                continue
            for i, position in zip(indices, found, strict=True):
                positions[i] = position
        if failed:
            raise next((f for f in failed if isinstance(f, HomeUnavailable)), failed[0])
        return positions

    async def _publish_to(self, region: str, records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        if region == self._region:
            return await self._publish(records)
        if self._home is None:
            raise HomeUnavailable(region, "this intake produces to no other region")
        routed = await self._home(region, records)
        INTAKE_HOME_AWARDS.labels(region).inc(len(records))
        return routed
