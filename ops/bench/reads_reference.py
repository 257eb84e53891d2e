"""The reference for ``ops/bench/reads``: top K as a plain Starlette JSON endpoint, no GraphQL.

It reads through the same :class:`gateway.projections.Projections` (same Redis read, same
micro-cache) and serves on the same uvicorn settings as the gateway, so the ratio measures what
GraphQL costs on top. ``GET /top?board=<id>&k=10``.
"""

from __future__ import annotations

import os

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.projections import Projections
from regions.core.boards import Board
from regions.core.reads import Scope
from regions.redis_projection import RedisProjection, connect_redis
from regions.redis_reads import RankReader
from regions.settings import load_settings


def main() -> None:
    settings = load_settings()
    redis = connect_redis(settings.redis)
    prefix = settings.redis.key_prefix
    reader = RankReader(RedisProjection(redis, prefix), prefix, settings.region)
    projections = Projections(settings.region, reader, settings.gateway.top_cache_ttl_s)
    encode = msgspec.json.Encoder().encode

    async def top(request: Request) -> Response:
        board = Board(request.query_params["board"], "bench", settings.region)
        page = await projections.top(board, int(request.query_params.get("k", "10")), Scope.HOME)
        body = {
            "entries": [{"rank": e.rank, "userId": e.user_id, "score": e.score} for e in page.entries],
            "asOf": {
                "region": page.as_of.region,
                "positions": {f"{r}:{p}": o for (r, p), o in page.as_of.positions.items()},
                "stale": page.as_of.stale,
            },
        }
        return Response(encode(body), media_type="application/json")

    app = Starlette(routes=[Route("/top", top)])
    port = int(os.environ["LB_OPS_BENCH_REFERENCE_PORT"])
    uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", access_log=False,
                log_level="warning")  # fmt: skip


if __name__ == "__main__":
    main()
