"""Profiles through a per-request DataLoader: one batched lookup, and reads that survive a bad store."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cassandra.cluster import Session
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from gateway.core.breaker import BreakerState
from regions.core.boards import Board
from regions.core.profiles import Profile
from regions.runtime.settings import Settings
from regions.stores.cassandra.profiles import CassandraProfiles
from regions.stores.cassandra.session import connect
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory, eventually, serve_gateway
from tests.proxy import TcpProxy

TOP = "query($id: ID!, $k: Int) { leaderboard(id: $id) { top(k: $k) { entries { userId score profile { displayName country } } } } }"


async def seed_profiles(session: Session, users: list[str]) -> None:
    store = CassandraProfiles(session)
    await asyncio.gather(*(store.put(Profile(u, f"Player {u}", "FR")) for u in users))


async def test_one_batched_profile_lookup_per_request_whatever_the_page_size(
    gateway_factory: GatewayFactory, boards: Boards, cassandra_session: Session
) -> None:
    board = await boards.create()
    users = [f"p{i:03d}-{board.id}" for i in range(60)]
    await boards.set_totals(board, [(u, 1000 - i) for i, u in enumerate(users)])
    await seed_profiles(cassandra_session, users[:50])
    async with gateway_factory(max_top_k=100, profile_cache_ttl_s=0) as gw:
        store = gw.services.profiles
        counts = []
        for k in (1, 10, 60):
            before = _round_trips(gw)
            body = await gw.query(TOP, {"id": board.id, "k": k})
            counts.append(_round_trips(gw) - before)
            entries = body["data"]["leaderboard"]["top"]["entries"]
            assert len(entries) == k
        ctx_before = _round_trips(gw)
        await gw.query(
            "query($id: ID!, $u: ID!) { leaderboard(id: $id) { context(userId: $u, range: 10) {"
            " above { profile { displayName } } player { profile { displayName } } below { profile { displayName } } } } }",
            {"id": board.id, "u": users[30]},
        )
        ctx_count = _round_trips(gw) - ctx_before
        assert store.breaker.failures == 0

    assert counts == [1, 1, 1]
    assert ctx_count == 1
    assert entries[0]["profile"] == {"displayName": f"Player {users[0]}", "country": "FR"}
    assert entries[55]["profile"] is None  # no stored profile


FRIENDS = """query($id: ID!, $users: [ID!]!) { leaderboard(id: $id) { players(userIds: $users) {
  entries { userId rankAmong player { rank profile { displayName country } } } } } }"""


async def test_a_friends_list_loads_every_listed_players_profile_in_one_batch(
    gateway_factory: GatewayFactory,
    boards: Boards,
    cassandra_session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    board = await boards.create()
    scored = [f"f{i:03d}-{board.id}" for i in range(90)]
    unscored = [f"none{i}-{board.id}" for i in range(10)]  # listed, no score: no player, no profile
    await boards.set_totals(board, [(u, 1000 - i) for i, u in enumerate(scored)])
    await seed_profiles(cassandra_session, scored[:80])  # the last 10 scored players have none
    asked = [*unscored[:5], *reversed(scored), *unscored[5:]]  # 100 ids: the most a list takes
    async with gateway_factory(profile_cache_ttl_s=0, top_cache_ttl_s=0) as gw:  # each read asks anew
        assert len(asked) == gw.settings.gateway.max_listed_players
        profiles, batches = gw.services.profiles, []
        lookup = profiles.lookup

        async def observed(user_ids: list[str]) -> list[object]:
            batches.append(list(user_ids))
            return await lookup(user_ids)

        monkeypatch.setattr(profiles, "lookup", observed)  # each request's DataLoader batches into it
        bodies, trips, planned = [], [], []
        for _ in range(2):  # the generic executor answers first, then the document's compiled plan
            before, plans = _round_trips(gw), _planned("answered")
            bodies.append(await gw.query(FRIENDS, {"id": board.id, "users": asked}))
            trips.append(_round_trips(gw) - before)
            planned.append(_planned("answered") - plans)

    assert planned == [0, 1]
    assert [sorted(batch) for batch in batches] == [sorted(scored)] * 2  # one batch a request, each id once
    assert trips == [1, 1]  # one Cassandra query for it
    for body in bodies:
        entries = body["data"]["leaderboard"]["players"]["entries"]
        assert [(e["userId"], e["rankAmong"]) for e in entries] == [
            *((u, i) for i, u in enumerate(scored, start=1)),
            *((u, None) for u in unscored),
        ]
        assert [e["player"] and e["player"]["profile"] for e in entries] == [
            *({"displayName": f"Player {u}", "country": "FR"} for u in scored[:80]),
            *([None] * 20),
        ]


def _planned(outcome: str) -> float:
    """Operations of this process run by their compiled plan (``gateway.metrics.PLANNED``)."""
    return REGISTRY.get_sample_value("lb_gateway_planned_total", {"outcome": outcome}) or 0.0


def _round_trips(gw: Gateway) -> int:
    return gw.services.cassandra.adapter.profiles.round_trips


@contextlib.asynccontextmanager
async def gateway_via_proxy(
    settings: Settings, redis: Redis, proxy: TcpProxy, **gateway: object
) -> AsyncIterator[Gateway]:
    port = await proxy.start()
    cassandra = settings.cassandra.model_copy(update={"port": port, "contact_points": ["127.0.0.1"]})
    cluster, session = await asyncio.to_thread(connect, cassandra)
    adjusted = settings.model_copy(update={"gateway": settings.gateway.model_copy(update=gateway)})
    try:
        async with serve_gateway(adjusted, redis, session) as gw:
            yield gw
    finally:
        await proxy.close()
        await asyncio.to_thread(cluster.shutdown)


async def read_top(gw: Gateway, board_id: str) -> list[dict[str, object]]:
    body = await gw.query(TOP, {"id": board_id, "k": 10})
    entries: list[dict[str, object]] = body["data"]["leaderboard"]["top"]["entries"]
    if any(e["profile"] is None for e in entries):  # null profiles are never silent
        assert body["extensions"]["warnings"][0]["code"] == "STORE_UNAVAILABLE", body
    return entries


def _lookups(outcome: str) -> float:
    """Batched profile lookups of this process so far that ended in ``outcome`` (see gateway.metrics)."""
    return REGISTRY.get_sample_value("lb_gateway_profile_lookups_total", {"outcome": outcome}) or 0.0


async def ranked_with_profiles(
    boards: Boards, session: Session, tag: str, count: int, top: int
) -> tuple[Board, list[str]]:
    """A board of ``count`` players scored top-down from ``top``, each with a stored profile."""
    board = await boards.create()
    users = [f"{tag}{i}-{board.id}" for i in range(count)]
    await boards.set_totals(board, [(u, top - i) for i, u in enumerate(users)])
    await seed_profiles(session, users)
    return board, users


async def test_hung_profile_store_answers_ids_and_scores_at_the_budget_then_the_breaker_skips_it(
    settings: Settings, redis_client: Redis, boards: Boards, cassandra_session: Session
) -> None:
    ranked = [await ranked_with_profiles(boards, cassandra_session, tag, 10, 100) for tag in "stu"]
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(
        settings, redis_client, proxy, profile_timeout_s=0.2, profile_breaker_failures=2,
        profile_breaker_reset_s=600, top_cache_ttl_s=0, profile_cache_ttl_s=0,
    ) as gw:  # fmt: skip
        healthy = [await read_top(gw, board.id) for board, _ in ranked]  # board definitions cached now
        proxy.hold()  # the store never answers from here on
        timeouts = _lookups("timeout")
        slow = [await read_top(gw, board.id) for board, _ in ranked[:2]]  # two lookups, other players
        timed_out = _lookups("timeout") - timeouts
        breaker = gw.services.profiles.breaker.state(time.monotonic())
        trips, skips = _round_trips(gw), _lookups("skipped")
        skipped = await read_top(gw, ranked[2][0].id)
        asked, skipped_lookups = _round_trips(gw) - trips, _lookups("skipped") - skips

    assert healthy[0][0]["profile"] == {"displayName": f"Player {ranked[0][1][0]}", "country": "FR"}
    assert timed_out == 2  # each read was answered at its budget while the store still owed the answer
    for entries, (_, users) in zip(slow, ranked, strict=False):
        assert [(e["userId"], e["profile"]) for e in entries] == [(u, None) for u in users]
    assert breaker is BreakerState.OPEN
    assert (asked, skipped_lookups) == (0, 1)  # the open breaker answered without asking the store
    assert [(e["userId"], e["score"], e["profile"]) for e in skipped] == [
        (u, 100 - i, None) for i, u in enumerate(ranked[2][1])
    ]


async def test_profile_store_down_still_answers_ids_and_scores(
    settings: Settings, redis_client: Redis, boards: Boards, cassandra_session: Session
) -> None:
    board, users = await ranked_with_profiles(boards, cassandra_session, "d", 5, 50)
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(
        settings, redis_client, proxy, profile_timeout_s=0.2, top_cache_ttl_s=0, profile_cache_ttl_s=0
    ) as gw:
        healthy = await read_top(gw, board.id)
        proxy.cut()
        before = {outcome: _lookups(outcome) for outcome in ("ok", "error", "timeout")}
        down = await read_top(gw, board.id)
        after = {outcome: _lookups(outcome) for outcome in ("ok", "error", "timeout")}

    assert healthy[0]["profile"] is not None
    assert after["ok"] == before["ok"]
    # The read had its answer when the lookup failed or ran out of its budget, not when the store came back.
    assert after["error"] + after["timeout"] > before["error"] + before["timeout"]
    assert [(e["userId"], e["profile"]) for e in down] == [(u, None) for u in users]


TOP_100 = (
    "query($id: ID!) { leaderboard(id: $id) { top(k: 100) { entries { userId profile { displayName } } } } }"
)


def _profiles(body: dict[str, Any]) -> list[object]:
    return [e["profile"] for e in body["data"]["leaderboard"]["top"]["entries"]]


async def test_concurrent_top_100_reads_share_one_profile_lookup_and_all_get_profiles(
    settings: Settings, redis_client: Redis, boards: Boards, cassandra_session: Session
) -> None:
    board, users = await ranked_with_profiles(boards, cassandra_session, "c", 100, 1000)
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(settings, redis_client, proxy, profile_timeout_s=5, top_cache_ttl_s=0) as gw:
        proxy.delay_s = 0.3  # a slow answer: the second read asks while the first one's lookup runs
        before = _round_trips(gw)
        bodies = await asyncio.gather(*(gw.query(TOP_100, {"id": board.id}) for _ in range(2)))
        trips = _round_trips(gw) - before

    assert trips == 1
    for body in bodies:
        assert _profiles(body) == [{"displayName": f"Player {u}"} for u in users]
        assert "extensions" not in body or "warnings" not in body["extensions"]


def _operations(outcome: str = "ok") -> float:
    labels = {"type": "query", "operation": "leaderboard", "outcome": outcome}
    return REGISTRY.get_sample_value("lb_gateway_operation_seconds_count", labels) or 0.0


async def test_identical_reads_that_arrive_while_one_is_answered_wait_for_its_answer_and_read_nothing(
    settings: Settings, redis_client: Redis, boards: Boards, cassandra_session: Session
) -> None:
    board, users = await ranked_with_profiles(boards, cassandra_session, "f", 100, 1000)
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    # An answer cache that outlives the test: a request that arrives after the first answer is a hit,
    # never a second read, however slow the machine.
    async with gateway_via_proxy(
        settings, redis_client, proxy, profile_timeout_s=5, profile_cache_ttl_s=0, top_cache_ttl_s=60
    ) as gw:
        proxy.delay_s = 0.5  # the first read waits for its profiles while the others arrive
        before, trips = _operations(), _round_trips(gw)
        bodies = await asyncio.gather(*(gw.query(TOP_100, {"id": board.id}) for _ in range(10)))
        operations, trips = _operations() - before, _round_trips(gw) - trips

    assert operations == 1
    assert trips == 1
    assert all(body == bodies[0] for body in bodies)
    assert _profiles(bodies[0]) == [{"displayName": f"Player {u}"} for u in users]


def _answers(result: str) -> float:
    return REGISTRY.get_sample_value("lb_gateway_answer_cache_total", {"result": result}) or 0.0


async def test_while_an_expired_answer_is_read_again_identical_reads_get_the_expired_one(
    settings: Settings, redis_client: Redis, boards: Boards, cassandra_session: Session
) -> None:
    board, _ = await ranked_with_profiles(boards, cassandra_session, "s", 100, 1000)
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(
        settings, redis_client, proxy, profile_timeout_s=5, profile_cache_ttl_s=0, top_cache_ttl_s=1.0
    ) as gw:
        for attempt in range(3):  # the expired answer is given until it is twice the TTL (2 s) old
            proxy.delay_s = 0
            if attempt:
                await asyncio.sleep(2.1)  # the last attempt's answer is past giving
            first = await gw.query(TOP_100, {"id": board.id})
            read_at = time.monotonic()
            await asyncio.sleep(1.05)  # expired, and younger than 2 s if the loop was not held up
            proxy.delay_s = 1.0  # the read that renews it waits for its profiles
            before, stale, shared = _operations(), _answers("stale"), _answers("shared")
            sent_at = time.monotonic()
            bodies = await asyncio.gather(*(gw.query(TOP_100, {"id": board.id}) for _ in range(10)))
            if sent_at - read_at < 1.5:
                break
        operations, stale, shared = _operations() - before, _answers("stale") - stale, _answers("shared") - shared

    assert operations == 1
    assert stale >= 1 and stale + shared == 9
    assert all(body == first for body in bodies)  # nothing changed on the board: the same answer


async def test_a_lookup_past_the_budget_is_reported_and_its_late_answer_serves_the_next_read(
    settings: Settings, redis_client: Redis, boards: Boards, cassandra_session: Session
) -> None:
    board, users = await ranked_with_profiles(boards, cassandra_session, "l", 100, 1000)
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(
        settings, redis_client, proxy, profile_timeout_s=0.1, profile_cache_ttl_s=60, top_cache_ttl_s=0
    ) as gw:
        proxy.delay_s = 0.5
        late = await gw.query(TOP_100, {"id": board.id})
        await eventually(lambda: _all_profiles(gw, board.id))
        trips = _round_trips(gw)
        served = await gw.query(TOP_100, {"id": board.id})

    assert _profiles(late) == [None] * 100
    warning = late["extensions"]["warnings"][0]
    assert warning["code"] == "STORE_UNAVAILABLE" and warning["store"] == "profiles"
    assert "100 profiles fields are null" in warning["message"]
    assert _profiles(served) == [{"displayName": f"Player {u}"} for u in users]
    assert _round_trips(gw) == trips  # from the cache the late answer filled, not the slow store


async def _all_profiles(gw: Gateway, board_id: str) -> bool:
    return None not in _profiles(await gw.query(TOP_100, {"id": board_id}))


async def test_profiles_come_back_as_soon_as_cassandra_does_not_after_the_breaker_reset(
    settings: Settings, redis_client: Redis, boards: Boards, cassandra_session: Session
) -> None:
    board, users = await ranked_with_profiles(boards, cassandra_session, "b", 5, 50)
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(
        settings, redis_client, proxy, profile_timeout_s=0.5, profile_breaker_failures=1,
        profile_breaker_reset_s=600, profile_cache_ttl_s=0, top_cache_ttl_s=0,
    ) as gw:  # fmt: skip
        await read_top(gw, board.id)  # the board's definition is cached from now on
        proxy.cut()
        down = await read_top(gw, board.id)
        assert gw.services.profiles.breaker.state(time.monotonic()).value == "open"
        proxy.heal()
        await eventually(lambda: _breaker_closed(gw), within=30)  # long before its 600 s reset
        back = await read_top(gw, board.id)

    assert [e["profile"] for e in down] == [None] * 5
    assert [e["profile"] for e in back] == [{"displayName": f"Player {u}", "country": "FR"} for u in users]


async def _breaker_closed(gw: Gateway) -> bool:
    return gw.services.profiles.breaker.state(time.monotonic()).value == "closed"
