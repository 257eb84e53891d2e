"""Redis projection adapter: applies versioned totals with the Lua script of schema/lua."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from redis.asyncio import Redis

from regions.settings import RedisSettings
from schema.redis_keys import BoardKeys
from schema.resources import lua_script


def connect_redis(redis: RedisSettings) -> Redis:
    """A client for the projection; replies are decoded to str."""
    return Redis.from_url(redis.url, decode_responses=True)


@dataclass(frozen=True, slots=True)
class ProjectedTotal:
    """One total as the projection stores it: ``score`` and ``member`` already encode rank order."""

    user_id: str
    version: int
    total: int
    score: float
    member: str


class RedisProjection:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._apply = redis.register_script(lua_script("apply_totals"))

    async def apply(self, keys: BoardKeys, totals: Sequence[ProjectedTotal]) -> int:
        """Apply totals newer than the recorded versions, atomically; returns how many applied."""
        args: list[str | int | float] = []
        for t in totals:
            args += [t.user_id, t.version, t.total, t.score, t.member]
        return int(await self._apply(keys=[keys.ranking, keys.records], args=args))

    async def version_of(self, keys: BoardKeys, user_id: str) -> int | None:
        """The recorded version of one player's total, or None when the player is absent."""
        record = cast(str | None, await self._redis.hget(keys.records, user_id))
        return None if record is None else int(record.split("|", 1)[0])
