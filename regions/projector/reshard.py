"""A reshard's check before its swap: the new layout holds every player of the old one, at the same
version or a newer one.

The new layout is filled from the totals topic (a rebuild of the board into another shard count),
so after the last catch-up it holds everything the live projector applied to the old one. The check
proves it without a long pause: the whole old layout is compared while the live projector still
runs, which leaves only the players it changed meanwhile; those are compared again while it is
paused, after the last catch-up, and must all have caught up. A player's version bucket is the
read where the user id says, in each layout, for a page of the old layout's members at a time.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Protocol, cast

from regions.stores.redis.connection import execute_pipeline
from regions.stores.redis.layouts import Layout
from regions.stores.redis.projection import RedisProjection
from schema.redis_keys import shard_of

SCAN_PAGE = 5000  # members per ZSCAN step; their versions are compared in one round trip
PROGRESS_EVERY_S = 0.5


class ReshardRefused(Exception):
    """The new layout lacks versions the old one holds; the message names some of the players."""


class Progress(Protocol):
    async def verifying(self, done: int, total: int) -> None: ...


def _version(record: str | None) -> int:
    return -1 if record is None else int(record.split("|", 1)[0])


class Reshard:
    """Compares a board's live layout with the fresh one that will replace it."""

    def __init__(
        self, projection: RedisProjection, prefix: str, old: Layout, fresh: Layout, strip: int
    ) -> None:
        self._projection, self._prefix, self._strip = projection, prefix, strip
        self._old, self._fresh = old, fresh
        self._behind: set[str] = set()

    async def verify(self, progress: Progress, *, every: bool) -> None:
        """Compare every player (``every``), or those behind at the last comparison; raises
        ReshardRefused when, compared a second time, some are still behind."""
        if every:
            self._behind = await self._compare_all(progress)
            return
        still = await self._compare(self._behind)
        if still:
            shown = ", ".join(sorted(still)[:5])
            raise ReshardRefused(
                f"the new layout of {self._old.board_id} lacks the versions of {len(still)} player(s) the old one "
                f"holds ({shown}); it was discarded and the board keeps its {self._old.shards} shard(s)"
            )

    async def _compare_all(self, progress: Progress) -> set[str]:
        """Every member of the old layout (ZSCAN returns each one present throughout at least once,
        however the rankings change meanwhile), compared a page at a time."""
        redis, found, done, shown = self._projection.redis, set(), 0, 0.0
        total = await self._projection.count(self._old.board_id)
        for keys in self._old.shard_keys(self._prefix):
            cursor = None
            while cursor != 0:
                cursor, page = await redis.zscan(keys.ranking, cursor or 0, count=SCAN_PAGE)
                members = cast(list[tuple[str, float]], page)
                found |= await self._compare(member[self._strip :] for member, _ in members)
                done += len(page)
                if time.monotonic() >= shown + PROGRESS_EVERY_S:
                    shown = time.monotonic()
                    await progress.verifying(min(done, total), total)
        await progress.verifying(total, total)
        return found

    async def _compare(self, users: Iterable[str]) -> set[str]:
        users = sorted(users)
        if not users:
            return set()
        pipe = self._projection.redis.pipeline(transaction=False)
        for user in users:
            for layout in (self._old, self._fresh):
                keys = layout.shard(self._prefix, shard_of(user, layout.shards))
                pipe.hget(keys.bucket(user), user)
        replies = cast(list[str | None], await execute_pipeline(pipe))
        return {u for i, u in enumerate(users) if _version(replies[2 * i + 1]) < _version(replies[2 * i])}
