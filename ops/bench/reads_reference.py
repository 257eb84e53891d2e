"""The reference for ``ops/bench/reads``: the same reads as plain Starlette JSON endpoints, no GraphQL.

It reads through the same :class:`gateway.projections.Projections` (same Redis reads, same
micro-cache for top K) and serves on the same uvicorn settings as the gateway, so the ratio measures
what GraphQL costs on top. ``GET /top?board=<id>&k=10``, ``GET /player?board=<id>&user=<id>``,
``GET /context?board=<id>&user=<id>&range=4``, ``GET /page?board=<id>&rank=<n>`` (or ``&after=<cursor>``:
pages of 100, with the same rules and cursors as ``entries``) and ``GET /players?board=<id>&users=<id>,<id>``
(a friends list, ranked among itself as ``players(userIds)`` ranks it).
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
from regions.core import paging
from regions.core.boards import Board
from regions.core.player_lists import distinct, listed
from regions.core.reads import AsOf, RankedEntry, Scope
from regions.runtime.settings import load_settings
from regions.stores.redis.projection import RedisProjection, connect_redis
from regions.stores.redis.reads import RankReader


def entry(e: RankedEntry) -> dict[str, object]:
    return {"rank": e.rank, "userId": e.user_id, "score": e.score}


def as_of(a: AsOf) -> dict[str, object]:
    positions = {f"{region}:{partition}": offset for (region, partition), offset in a.positions.items()}
    return {"region": a.region, "positions": positions, "stale": a.stale}


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
        body = {"entries": [entry(e) for e in page.entries], "asOf": as_of(page.as_of)}
        return Response(encode(body), media_type="application/json")

    async def player(request: Request) -> Response:
        board = Board(request.query_params["board"], "bench", settings.region)
        found, read_as_of = await projections.player(board, request.query_params["user"], Scope.HOME)
        body = None if found is None else {**entry(found), "asOf": as_of(read_as_of)}
        return Response(encode(body), media_type="application/json")

    async def context(request: Request) -> Response:
        board, user = (
            Board(request.query_params["board"], "bench", settings.region),
            request.query_params["user"],
        )
        around = int(request.query_params.get("range", "4"))
        found = await projections.context(board, user, around, Scope.HOME)
        body = None if found is None else {
            "above": [entry(e) for e in found.above], "player": entry(found.player),
            "below": [entry(e) for e in found.below], "asOf": as_of(found.as_of),
        }  # fmt: skip
        return Response(encode(body), media_type="application/json")

    async def page(request: Request) -> Response:
        board, q = Board(request.query_params["board"], "bench", settings.region), request.query_params
        rank = int(q["rank"]) if "rank" in q else None
        wanted = paging.page_request(
            board.id, 100, q.get("after"), None, None, rank, settings.gateway.max_top_k
        )
        found, read_as_of = await projections.page(board, wanted, Scope.HOME)
        body = {
            "entries": [entry(e) for e in paging.page_entries(board, found)],
            "pageInfo": {"endCursor": paging.encode_cursor(board.id, found.rows[-1]) if found.rows else None,
                         "hasNextPage": found.has_next},
            "asOf": as_of(read_as_of),
        }  # fmt: skip
        return Response(encode(body), media_type="application/json")

    async def players(request: Request) -> Response:
        board = Board(request.query_params["board"], "bench", settings.region)
        users = distinct(request.query_params["users"].split(","))
        found, read_as_of = await projections.players(board, users, Scope.HOME)
        entries = [
            {"userId": item.user_id, "rankAmong": item.rank_among,
             "player": None if item.entry is None else entry(item.entry)}
            for item in listed(users, found)
        ]  # fmt: skip
        return Response(
            encode({"entries": entries, "asOf": as_of(read_as_of)}), media_type="application/json"
        )

    routes = [Route("/top", top), Route("/player", player), Route("/context", context),
              Route("/page", page), Route("/players", players)]  # fmt: skip
    app = Starlette(routes=routes)
    port = int(os.environ["LB_OPS_BENCH_REFERENCE_PORT"])
    uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", access_log=False,
                log_level="warning")  # fmt: skip


if __name__ == "__main__":
    main()
