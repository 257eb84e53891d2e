"""The close cutoffs a region's projection has reached, per board, in Redis.

The projector records a board's cutoff of a (region, partition) only after it applied every total
before that cutoff's ``CutoffReached`` record; the home lifecycle worker reads them to know when a
closing board's projection is final. A cutoff never moves: the first recorded stays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from regions.stores.redis.connection import ProjectionRedis, execute_pipeline
from schema.redis_keys import cutoffs_key


async def record_cutoffs(
    redis: ProjectionRedis, prefix: str, cutoffs: Mapping[str, Mapping[str, int]]
) -> None:
    """Record ``cutoffs`` (board -> ``<region>:<partition>`` -> offset), keeping any already there."""
    pipe = redis.pipeline(transaction=False)
    for board_id, reached in cutoffs.items():
        key = cutoffs_key(prefix, board_id)
        for where, offset in reached.items():
            pipe.hsetnx(key, where, offset)
    await execute_pipeline(pipe)


async def reached_cutoffs(redis: ProjectionRedis, prefix: str, board_id: str) -> dict[str, int]:
    """The cutoffs of ``board_id`` the projection has reached: ``<region>:<partition>`` -> offset."""
    found = cast(dict[str, str], await redis.hgetall(cutoffs_key(prefix, board_id)))
    return {where: int(offset) for where, offset in found.items()}
