"""Read and fan-out benchmark of the GraphQL gateway (a script that prints figures, not a test).

1. Seeds one board of N players (default 1,000,000) straight into Redis with
   ``RedisProjection.apply``, and the board into the Cassandra catalog.
2. Starts ``python -m gateway`` and the plain Starlette reference (``reads_reference.py``) as
   their own processes, both on uvloop + httptools, one worker each.
3. For top-10, player and context queries, pages of 100 (from the middle of the board, after a
   cursor) and friends lists (``players(userIds)`` of 50 and 100 ids; ``reads_lists.py``), each
   with the reference's same read: a closed loop at fixed concurrency for throughput, then a paced
   run at a fixed rate (latency is measured from each request's scheduled time, so a stalled server
   is not hidden). Prints q/s and p50/p95/p99.
4. Opens S subscribers (default 1,000) on the board, each following its own player, changes the
   top 10 once a second by writing Redis and publishing the hint as the projector does, and prints
   TopKChanged delivery latency (publish -> received by the client) and the gateway's RSS.

The load generator is a small keep-alive HTTP/1.1 client in this process; it shares the machine's
two cores with the gateway, the reference server and Redis. Run through ``ops/bench/reads``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

import httpx
import msgspec
import uvloop
from websockets.asyncio.client import ClientConnection, connect

from ops.bench import reads_lists
from ops.bench.kit import distribution, parser, percentiles, shown
from ops.bench.queries import (
    CONTEXT,
    PLAYER,
    TOP,
    Server,
    closed_loop,
    cursors,
    get,
    paced,
    post,
    start,
    stop,
    uncached,
)
from ops.bench.record import Figures, recorded
from ops.stack import free_port
from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode
from regions.core.positions import SourcePosition
from regions.runtime.settings import Settings, load_settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import apply_migrations
from regions.stores.cassandra.session import connect as connect_cassandra
from regions.stores.redis.projection import ProjectedTotal, RedisProjection, connect_redis
from schema.redis_keys import board_keys, positions_key

ROOT = Path(__file__).resolve().parents[2]

UPDATES = "subscription($b: ID!, $u: ID) { leaderboardUpdates(leaderboardId: $b, userId: $u) { __typename ... on TopKChanged { sequence } ... on Resync { reason sequence } } }"


def user_id(i: int) -> str:
    return f"p{i:07d}"


# ------------------------------------------------------------------ seeding


async def seed(settings: Settings, board: Board, players: int) -> None:
    redis = connect_redis(settings.redis)
    projection = RedisProjection(redis, settings.redis.key_prefix)
    rng = random.Random(7)
    started, batch, per_round = time.perf_counter(), 5000, 4
    for first in range(0, players, batch * per_round):
        totals = []
        for i in range(first, min(first + batch * per_round, players)):
            total = rng.randrange(0, 10_000_000)
            score, member = encode(board.sort_order, board.tie_policy, user_id(i), total, "")
            totals.append(ProjectedTotal(user_id(i), 1, total, score, member))
        await projection.apply(board.id, totals, board.shards)
        done = min(first + batch * per_round, players)
        if done % 100_000 < batch * per_round or done == players:
            rate = done / (time.perf_counter() - started)
            print(f"  seeded {done:>9,} / {players:,} players ({rate:,.0f}/s)", flush=True)
    await projection.start_epoch("bench")
    now_ms = int(time.time() * 1000)
    marks = {(settings.region, p): SourcePosition(1_000_000 + p, now_ms, now_ms) for p in range(6)}
    await projection.advance("bench", marks)
    await redis.aclose()


async def drop(settings: Settings, board: Board) -> None:
    redis = connect_redis(settings.redis)
    projection = RedisProjection(redis, settings.redis.key_prefix)
    await projection.drop([board.id])
    await projection.layouts.delete_retired()
    await redis.unlink(
        board_keys(settings.redis.key_prefix, board.id).sequence, positions_key(settings.redis.key_prefix)
    )
    await redis.aclose()


# ------------------------------------------------------------------ subscriptions


@dataclass
class Subscriber:
    received: dict[int, float] = field(default_factory=dict)
    resyncs: int = 0


async def subscribe(url: str, board: str, user: str, sink: Subscriber, ready: asyncio.Event) -> None:
    ws: ClientConnection
    async with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=60, max_size=None) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init"}))
        await ws.recv()
        payload = {"query": UPDATES, "variables": {"b": board, "u": user}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        ready.set()
        async for raw in ws:
            now = time.perf_counter()
            message = json.loads(raw)
            if message.get("type") == "ping":
                await ws.send(json.dumps({"type": "pong"}))
                continue
            update = message.get("payload", {}).get("data", {}).get("leaderboardUpdates")
            if update and update["__typename"] == "TopKChanged":
                sink.received[update["sequence"]] = now
            elif update and update["__typename"] == "Resync":
                sink.resyncs += 1


async def metric(port: int, name: str) -> float:
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


async def fan_out(
    settings: Settings, board: Board, gateway: Server, subscribers: int, changes: int, players: int
) -> Figures:
    url = f"ws://127.0.0.1:{gateway.port}/graphql"
    rss_before = gateway.rss_mib()
    sinks = [Subscriber() for _ in range(subscribers)]
    readies = [asyncio.Event() for _ in range(subscribers)]
    rng = random.Random(11)
    tasks = []
    for i, (sink, ready) in enumerate(zip(sinks, readies, strict=True)):
        tasks.append(
            asyncio.create_task(subscribe(url, board.id, user_id(rng.randrange(players)), sink, ready))
        )
        if i % 50 == 49:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 120)
    for _ in range(600):
        if await metric(gateway.port, "lb_gateway_subscriptions") >= subscribers:
            break
        await asyncio.sleep(0.2)
    rss_subscribed = gateway.rss_mib()
    print(
        f"  {subscribers} subscribers connected; gateway RSS {rss_before:.0f} MB before, {rss_subscribed:.0f} MB now"
    )

    redis = connect_redis(settings.redis)
    projection = RedisProjection(redis, settings.redis.key_prefix)
    published: dict[int, float] = {}
    cpu_before = gateway.cpu_seconds()
    for n in range(changes):
        champion = f"champion-{n:03d}"
        total = 20_000_000 + n
        score, member = encode(board.sort_order, board.tie_policy, champion, total, "")
        applied = await projection.apply(board.id, [ProjectedTotal(champion, 1, total, score, member)])
        hint = {"boardId": board.id, "sequence": applied.sequence, "positions": {f"{settings.region}:0": 2_000_000 + n},
                "users": [{"userId": champion, "score": total, "version": 1}], "truncated": False}  # fmt: skip
        published[applied.sequence] = time.perf_counter()
        await projection.publish_hint(board.id, msgspec.json.encode(hint))
        await asyncio.sleep(1.0)
    await asyncio.sleep(2.0)
    cpu_used = gateway.cpu_seconds() - cpu_before
    rss_after = gateway.rss_mib()

    latencies = [
        sink.received[seq] - sent for sink in sinks for seq, sent in published.items() if seq in sink.received
    ]
    expected = subscribers * len(published)
    print(
        f"  TopKChanged deliveries {len(latencies):,} of {expected:,} "
        f"({len(latencies) / expected:.1%}); resyncs {sum(s.resyncs for s in sinks)}"
    )
    delivery = percentiles(latencies, scale=1000)
    print(f"  delivery latency  {shown(delivery, unit=' ms', sep='   ')}   "
          f"max {max(latencies, default=float('nan')) * 1000:.0f} ms")  # fmt: skip
    print(
        f"  gateway RSS {rss_after:.0f} MB after {changes} changes; gateway CPU {cpu_used:.1f} s over {changes + 2} s"
    )
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await redis.aclose()
    print(
        f"  target: 1,000 subscribers get TopKChanged within 1 s p99 -> {'met' if delivery[0.99] < 1000 else 'MISSED'}"
    )
    return {"subscribers": subscribers, "changes": changes, "deliveries": len(latencies), "expected": expected,
            "resyncs": sum(s.resyncs for s in sinks), "delivery_ms": distribution(latencies, scale=1000),
            "rss_mib": {"before": rss_before, "subscribed": rss_subscribed, "after": rss_after},
            "gateway_cpu_s": cpu_used}  # fmt: skip


# ------------------------------------------------------------------ main


async def run(args: argparse.Namespace) -> Figures:
    base = load_settings()
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    settings = base.model_copy(update={"redis": base.redis.model_copy(update={"key_prefix": prefix})})
    board = Board(f"bench-{uuid.uuid4().hex[:8]}", "Benchmark board", settings.region,
                  sort_order=SortOrder.DESC, tie_policy=TiePolicy.USER_ID)  # fmt: skip
    print(f"== seeding {args.players:,} players into Redis (prefix {prefix}), board {board.id}")
    apply_migrations(settings.cassandra)
    cluster, session = connect_cassandra(settings.cassandra)
    await CassandraCatalog(session).create(board)
    cluster.shutdown()
    await seed(settings, board, args.players)

    env = {**os.environ, "LB_REDIS__KEY_PREFIX": prefix}
    gw_port, ref_port = free_port(), free_port()
    (ROOT / ".data" / "logs").mkdir(parents=True, exist_ok=True)
    gateway = await start(
        "gateway", ["-m", "gateway"],
        {**env, "LB_GATEWAY__PORT": str(gw_port), "LB_GATEWAY__WORKERS": str(args.gateway_workers),
         "LB_GATEWAY__PLANNED_READS": "false" if args.generic else "true"},
        gw_port, "/readyz",
    )  # fmt: skip
    reference = await start("reference", [str(ROOT / "ops/bench/reads_reference.py")],
                            {**env, "LB_OPS_BENCH_REFERENCE_PORT": str(ref_port)}, ref_port, f"/top?board={board.id}")  # fmt: skip
    try:
        figures = await reads(args, board, gateway, reference)
        if args.no_fan_out:
            return figures
        print(
            f"\n== subscription fan-out: {args.subscribers} subscribers, {args.changes} top-10 changes, 1/s"
        )
        figures["fan_out"] = await fan_out(settings, board, gateway, args.subscribers, args.changes, args.players)
        return figures
    finally:
        await stop(gateway)
        await stop(reference)
        await drop(settings, board)


@dataclass(frozen=True)
class Pair:
    """A GraphQL read and the plain Starlette endpoint doing the same Redis reads."""

    label: str
    graphql: Callable[[random.Random], bytes]
    plain: Callable[[random.Random], bytes]


def pairs(args: argparse.Namespace, board: Board, g: int, r: int, pool: list[str]) -> list[Pair]:
    """Every read; ``pool``: end cursors for the pages after a cursor."""
    nonce = iter(range(1 << 62))
    fresh_top = uncached(TOP)
    plain_top = get(r, f"/top?board={board.id}&k=10")
    top = post(g, TOP % board.id)
    player_doc, context_doc = json.loads(PLAYER % ("", ""))["query"], json.loads(CONTEXT % ("", ""))["query"]

    def user(rng: random.Random) -> str:
        return user_id(rng.randrange(args.players))

    def persisted(document: str, rng: random.Random) -> bytes:
        variables = json.dumps({"b": board.id, "u": user(rng)}, separators=(",", ":"))
        return get(g, "/graphql?" + urlencode({"variables": variables, "extensions": apq(document)}))

    found = [
        Pair("top(k: 10), answer cache", lambda _: top, lambda _: plain_top),
        Pair("top(k: 10), no answer cache", lambda _: post(g, fresh_top % (next(nonce), board.id)), lambda _: plain_top),
        Pair("player", lambda rng: post(g, PLAYER % (board.id, user(rng))),
             lambda rng: get(r, f"/player?board={board.id}&user={user(rng)}")),
        Pair("context(4)", lambda rng: post(g, CONTEXT % (board.id, user(rng))),
             lambda rng: get(r, f"/context?board={board.id}&user={user(rng)}&range=4")),
        Pair("player, persisted (GET)", lambda rng: persisted(player_doc, rng),
             lambda rng: get(r, f"/player?board={board.id}&user={user(rng)}")),
        Pair("context(4), persisted (GET)", lambda rng: persisted(context_doc, rng),
             lambda rng: get(r, f"/context?board={board.id}&user={user(rng)}&range=4")),
        *(Pair(*step) for step in reads_lists.steps(board.id, g, r, args.players, pool, user_id)),
    ]  # fmt: skip
    return [p for p in found if not args.only or p.label in args.only]


def apq(document: str) -> str:
    digest = hashlib.sha256(document.encode()).hexdigest()
    return json.dumps({"persistedQuery": {"version": 1, "sha256Hash": digest}}, separators=(",", ":"))


async def register(port: int, document: str, processes: int) -> None:
    """Registers a persisted document as an APQ client does after ``PersistedQueryNotFound``; each
    gateway process remembers its own, so on as many new connections as it takes to reach all."""
    body = {"query": document, "variables": {"b": "x", "u": "x"}, "extensions": json.loads(apq(document))}
    for _ in range(1 if processes == 1 else 40 * processes):
        async with httpx.AsyncClient() as http:
            (await http.post(f"http://127.0.0.1:{port}/graphql", json=body)).raise_for_status()


async def same_answers(args: argparse.Namespace, board: Board, g: int, r: int) -> None:
    """The GraphQL reads (plain and persisted) answer what the reference answers, for 50 players."""
    rng = random.Random(7)
    async with httpx.AsyncClient(base_url="http://127.0.0.1") as http:
        for _ in range(50):
            user = user_id(rng.randrange(args.players))
            plain = (
                await http.get(f"http://127.0.0.1:{r}/player", params={"board": board.id, "user": user})
            ).json()
            context = (await http.get(f"http://127.0.0.1:{r}/context",
                                      params={"board": board.id, "user": user, "range": 4})).json()  # fmt: skip
            for document, want in ((PLAYER, plain), (CONTEXT, context)):
                request = json.loads(document % (board.id, user))
                posted = (await http.post(f"http://127.0.0.1:{g}/graphql", json=request)).json()
                params = {"variables": json.dumps(request["variables"]), "extensions": apq(request["query"])}
                got = (await http.get(f"http://127.0.0.1:{g}/graphql", params=params)).json()
                assert got == posted, (got, posted)
                found = posted["data"]["leaderboard"]["player" if document is PLAYER else "context"]
                if document is PLAYER:
                    assert {k: found[k] for k in ("rank", "userId", "score")} == {
                        k: want[k] for k in ("rank", "userId", "score")
                    }
                else:
                    for part in ("above", "player", "below"):
                        assert found[part] == want[part], (part, found[part], want[part])
    print("  answers checked: persisted GET == POST == the reference's, for 50 players (player, context)")


async def reads(args: argparse.Namespace, board: Board, gateway: Server, reference: Server) -> Figures:
    """Each GraphQL read and its plain counterpart, closed loop, interleaved ``--repeats`` times (the
    machine is shared: a ratio is only meaningful when both sides ran under the same load), then a
    paced run of each GraphQL read for its latency at ``--rate``."""
    g, r = gateway.port, reference.port
    for document in (json.loads(PLAYER % ("", ""))["query"], json.loads(CONTEXT % ("", ""))["query"]):
        await register(g, document, args.gateway_workers)
    await same_answers(args, board, g, r)
    pool = await cursors(g, board.id, args.players, random.Random(3), 200)
    await reads_lists.same_answers(board.id, g, r, args.players, pool, user_id)
    print(f"\n== reads: {args.duration:.0f} s per run, {args.repeats} runs of each side interleaved, "
          f"closed loop at {args.concurrency} connections; gateway {args.gateway_workers} process(es)"
          f"{' without plans' if args.generic else ''}, reference 1")  # fmt: skip
    await closed_loop("warm-up", g, lambda: post(g, TOP % board.id), 4, 2)
    await closed_loop("warm-up", r, lambda: get(r, f"/top?board={board.id}&k=10"), 4, 2)
    summary, measured = [], []
    for pair in pairs(args, board, g, r, pool):
        rates: dict[str, list[float]] = {"graphql": [], "plain": []}
        per_cpu: dict[str, list[float]] = {"graphql": [], "plain": []}
        for n in range(args.repeats):
            for side, server, make in (("graphql", gateway, pair.graphql), ("plain", reference, pair.plain)):
                rng = random.Random(n)
                cpu = server.cpu_seconds()
                result = await closed_loop(
                    f"{pair.label} [{side}]", server.port, partial(make, rng), args.concurrency, args.duration
                )
                used = server.cpu_seconds() - cpu
                rates[side].append(result.rate)
                per_cpu[side].append(result.requests / used if used else float("nan"))
                measured.append({**result.figures(), "side": side, "read": pair.label, "per_cpu_s": per_cpu[side][-1]})
                print(result.line() + f"   {per_cpu[side][-1]:7,.0f} per server CPU-s", flush=True)
        ratios = [a / b for a, b in zip(rates["graphql"], rates["plain"], strict=True)]
        cpu_ratios = [a / b for a, b in zip(per_cpu["graphql"], per_cpu["plain"], strict=True)]
        summary.append((pair.label, statistics.median(rates["graphql"]), statistics.median(rates["plain"]),
                        statistics.median(ratios), statistics.median(per_cpu["graphql"]),
                        statistics.median(per_cpu["plain"]), statistics.median(cpu_ratios)))  # fmt: skip
    print("\n  medians of the runs; 'per CPU-s' is requests per CPU second of the server's processes, the")
    print("  ratio that holds on a shared machine (q/s also depends on what else runs)")
    print(f"  {'read':<29} {'graphql q/s':>12} {'plain q/s':>10} {'ratio':>7}"
          f" {'graphql/CPU-s':>14} {'plain/CPU-s':>12} {'ratio':>7}")  # fmt: skip
    for label, gql, plain, ratio, gql_cpu, plain_cpu, cpu_ratio in summary:
        print(f"  {label:<29} {gql:>12,.0f} {plain:>10,.0f} {ratio:>6.2f}x"
              f" {gql_cpu:>14,.0f} {plain_cpu:>12,.0f} {cpu_ratio:>6.2f}x")  # fmt: skip
    for pair in pairs(args, board, g, r, pool):
        if pair.label.startswith(("top(k: 10), answer", "context(4)", "page 100", "players(")):
            rng = random.Random(99)
            steady = await paced(
                pair.label, g, partial(pair.graphql, rng), args.concurrency, args.rate, args.duration
            )
            verdict = "met" if steady.p99_ms < 50 else "MISSED"
            measured.append({**steady.figures(), "side": "graphql", "read": pair.label})
            print(steady.line() + f"   (target p99 < 50 ms: {verdict})", flush=True)
    print(f"  gateway RSS {gateway.rss_mib():.0f} MB, reference RSS {reference.rss_mib():.0f} MB")
    names = ("read", "graphql_q_per_s", "plain_q_per_s", "ratio", "graphql_per_cpu_s", "plain_per_cpu_s", "cpu_ratio")
    return {"reads": [dict(zip(names, row, strict=True)) for row in summary], "runs": measured,
            "rss_mib": {"gateway": gateway.rss_mib(), "reference": reference.rss_mib()}}  # fmt: skip


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--players", type=int, default=1_000_000)
    p.add_argument("--concurrency", type=int, default=32, help="connections per run")
    p.add_argument("--rate", type=float, default=500, help="paced runs: requests per second")
    p.add_argument("--duration", type=float, default=10, help="seconds per run")
    p.add_argument("--subscribers", type=int, default=1000)
    p.add_argument("--changes", type=int, default=20, help="top-10 changes during the fan-out run")
    p.add_argument("--repeats", type=int, default=3, help="closed-loop runs of each side (median)")
    p.add_argument("--gateway-workers", type=int, default=1, help="gateway processes on one port")
    p.add_argument("--only", action="append", help="run only the read with this label (repeatable)")
    p.add_argument("--generic", action="store_true", help="no compiled plans: strawberry's executor only")
    p.add_argument("--no-fan-out", action="store_true", help="skip the subscription run")
    args = p.parse_args()
    recorded("reads", args, lambda: uvloop.run(run(args)))


if __name__ == "__main__":
    main()
