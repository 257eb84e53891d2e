"""Windowed boards through the gateway: the current period answers top/player/context, any period
and the list of periods are readable with their status and archive, rolling boards have no periods,
and a subscription follows the current period and says when it rolls over."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from cassandra.cluster import Session
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport
from redis.asyncio import Redis

from regions.core.boards import Board
from regions.core.periods import Period, WindowSpec, period_of, previous_period
from regions.core.windows import encode_window
from regions.runtime.settings import Settings
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults, ResultHeader
from schema.lifecycle import ResultChunk
from tests.integration.gateway.conftest import Boards, Gateway, eventually, serve_gateway
from tests.integration.gateway.test_persisted import planned

DAILY = WindowSpec(Period.DAILY, time_zone="Europe/Stockholm")
READ = """query($id: ID!, $key: String) {
  leaderboard(id: $id) {
    window { period timeZone }
    top { entries { userId score } }
    player(userId: "ann") { rank score }
    current: period { key status startsAt endsAt top { entries { userId } asOf { positions { offset } } } }
    past: period(key: $key) {
      key status top { entries { userId score } asOf { positions { region partition offset } } }
      result { version entries { userId score } }
    }
    periods(first: 3) { key status }
  }
}"""


async def _windowed(boards: Boards, session: Session, spec: WindowSpec, created_ms: int) -> Board:
    board = Board(
        f"gw-{uuid.uuid4().hex[:12]}", "windowed", boards.settings.region, window=encode_window(spec)
    )
    assert await boards.catalog.create(board)
    session.execute("UPDATE boards SET created_at = %s WHERE board_id = %s",
                    (datetime.fromtimestamp(created_ms / 1000, UTC), board.id))  # fmt: skip
    return board


async def test_a_daily_board_reads_its_current_period_and_its_past_ones(
    settings: Settings, redis_client: Redis, cassandra_session: Session, boards: Boards
) -> None:
    now = int(time.time() * 1000)
    today = period_of(DAILY, now)
    yesterday = previous_period(DAILY, today)
    board = await _windowed(boards, cassandra_session, DAILY, yesterday.start_ms + 600_000)  # past its grace
    await boards.set_totals(board.for_period(today.key), [("ann", 5), ("bob", 9)])
    await boards.set_totals(board.for_period(yesterday.key), [("ann", 40)])
    await boards.set_positions({0: 10}, accepted_ms=now)
    periods, results = CassandraPeriods(cassandra_session), CassandraResults(cassandra_session)
    scoped = board.for_period(yesterday.key).id
    assert await periods.begin(board.id, yesterday, datetime.now(UTC))
    await results.put_chunks(scoped, 1, [(0, ResultChunk(1, [("ann", 40, 1, "")]))])
    await results.put_header(ResultHeader(scoped, 1, datetime.now(UTC), "period ended", 1, 1, 10))
    assert await periods.finish_close(scoped, {"local:0": 3}, 1, datetime.now(UTC))

    uncached = settings.model_copy(
        update={"gateway": settings.gateway.model_copy(update={"top_cache_ttl_s": 0})}
    )
    async with serve_gateway(uncached, redis_client, cassandra_session) as gw:
        body = await gw.query(READ, {"id": board.id, "key": yesterday.key})
        answered = planned("answered")
        again = await gw.query(READ, {"id": board.id, "key": yesterday.key})  # by the document's plan

    assert planned("answered") == answered + 1 and again == body
    assert "errors" not in body, body
    read = body["data"]["leaderboard"]
    assert read["window"] == {"period": "DAILY", "timeZone": "Europe/Stockholm"}
    assert read["top"]["entries"] == [{"userId": "bob", "score": 9}, {"userId": "ann", "score": 5}]
    assert read["player"] == {"rank": 2, "score": 5}
    assert read["current"]["key"] == today.key and read["current"]["status"] == "OPEN"
    assert read["current"]["startsAt"] == datetime.fromtimestamp(today.start_ms / 1000, UTC).isoformat()
    assert read["current"]["top"] == {"entries": [{"userId": "bob"}, {"userId": "ann"}],
                                      "asOf": {"positions": [{"offset": 10}]}}  # fmt: skip
    assert read["past"] == {
        "key": yesterday.key, "status": "CLOSED",
        "top": {"entries": [{"userId": "ann", "score": 40}],  # its asOf: the cutoffs it closed with
                "asOf": {"positions": [{"region": "local", "partition": 0, "offset": 3}]}},
        "result": {"version": 1, "entries": [{"userId": "ann", "score": 40}]},
    }  # fmt: skip
    assert read["periods"] == [
        {"key": today.key, "status": "OPEN"},
        {"key": yesterday.key, "status": "CLOSED"},
    ]


async def test_periods_refuse_bad_keys_and_boards_without_periods(
    settings: Settings, redis_client: Redis, cassandra_session: Session, boards: Boards
) -> None:
    now = int(time.time() * 1000)
    daily = await _windowed(boards, cassandra_session, DAILY, now)
    rolling = await _windowed(boards, cassandra_session, WindowSpec(Period.ROLLING, 7), now)
    plain = await boards.create()
    async with serve_gateway(settings, redis_client, cassandra_session) as gw:
        bad_key = await gw.query('query($id: ID!) { leaderboard(id: $id) { period(key: "2026-W49") { key } } }',
                                 {"id": daily.id})  # fmt: skip
        before = await gw.query('query($id: ID!) { leaderboard(id: $id) { period(key: "1999-01-01") { key } } }',
                                {"id": daily.id})  # fmt: skip
        no_periods = [
            await gw.query("query($id: ID!) { leaderboard(id: $id) { periods { key } } }", {"id": b.id})
            for b in (rolling, plain)
        ]
    assert bad_key["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert bad_key["errors"][0]["message"].startswith(
        "key: '2026-W49' is not a DAILY period key (YYYY-MM-DD)"
    )
    assert before["data"] == {"leaderboard": {"period": None}}
    assert "is ROLLING (7 days): it has no periods" in no_periods[0]["errors"][0]["message"]
    assert "is an all-time board: it has no periods" in no_periods[1]["errors"][0]["message"]


UPDATES = """subscription($board: ID!) {
  leaderboardUpdates(leaderboardId: $board) {
    __typename
    ... on TopKChanged { leaderboardId k }
    ... on BoardStatusChanged { leaderboardId status resultVersion period sequence }
  }
}"""


async def test_a_subscription_follows_the_current_period_and_says_when_it_rolls_over(
    settings: Settings, redis_client: Redis, cassandra_session: Session, boards: Boards
) -> None:
    now = int(time.time() * 1000)
    spec = WindowSpec(Period.DAILY, time_zone="Asia/Kolkata")
    board = await _windowed(boards, cassandra_session, spec, now)
    await boards.set_positions({0: 1}, accepted_ms=now)
    today = period_of(spec, now)
    tomorrow = period_of(spec, today.end_ms)
    received: list[dict[str, Any]] = []
    # Its own window settings: the test moves this gateway's clock, and nobody else's.
    settings = settings.model_copy(update={"windows": settings.windows.model_copy()})
    async with serve_gateway(settings, redis_client, cassandra_session) as gw:
        windows = gw.services.settings.windows
        assert windows is settings.windows

        def clock_at(target_ms: int) -> None:  # the gateway's window clock (a test-only setting)
            windows.clock_offset_s = (target_ms - time.time() * 1000) / 1000

        clock_at(today.end_ms - 3_600_000)

        async def follow() -> None:
            async with Client(transport=WebsocketsTransport(url=gw.ws_url)) as session:
                async for result in session.subscribe(
                    GraphQLRequest(UPDATES, variable_values={"board": board.id})
                ):
                    received.append(result["leaderboardUpdates"])

        async def nudge(period: Board, user: str) -> None:
            """Change the period's top until the subscriber hears of it: a hint published before its
            feed has read the board's baseline may tell it nothing new."""
            heard = len(received)
            for score in range(1, 60):
                await boards.set_totals(period, [(user, score)], hint=True)
                with contextlib.suppress(TimeoutError):
                    await eventually(lambda: _received(received, heard + 1), within=1)
                    return
            raise AssertionError(f"no update for {period.id}: {received}")

        task = asyncio.create_task(follow())
        await eventually(lambda: _ready(gw, board.for_period(today.key).id), within=30)
        await nudge(board.for_period(today.key), "ann")
        clock_at(today.end_ms - 500)  # half a second before the end of today
        await boards.set_totals(board.for_period(today.key), [("ann", 100)], hint=True)  # wakes the stream
        await eventually(lambda: _rolled(received), within=30)
        await nudge(board.for_period(tomorrow.key), "bob")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    top = {"__typename": "TopKChanged", "leaderboardId": board.id, "k": 10}
    [rolled] = [n for n, update in enumerate(received) if update["__typename"] == "BoardStatusChanged"]
    assert received[rolled] == {
        "__typename": "BoardStatusChanged", "leaderboardId": board.id, "status": "OPEN", "resultVersion": None,
        "period": tomorrow.key, "sequence": tomorrow.start_ms * 1000,
    }  # fmt: skip
    assert received[:rolled] and all(u == top for u in received[:rolled])
    assert received[rolled + 1 :] and all(u == top for u in received[rolled + 1 :])


async def _rolled(received: list[dict[str, Any]]) -> bool:
    return any(update["__typename"] == "BoardStatusChanged" for update in received)


async def _received(received: list[dict[str, Any]], count: int) -> bool:
    return len(received) >= count


async def _ready(gw: Gateway, board_id: str) -> bool:
    """A subscriber of the board is ready (its baseline is read): the next hint is news to it."""
    return bool(gw.services.hub.mailbox_depths(board_id))
