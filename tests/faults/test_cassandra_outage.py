"""Processes started while Cassandra is unreachable (cut by a TCP proxy): they start, say what is
missing, answer clearly, and catch up once Cassandra is back."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from cassandra.cluster import Session

from regions.core.boards import Board
from regions.runtime.settings import Settings
from regions.stores.cassandra.audit import CassandraAudit
from schema.event_id import event_id
from tests.conftest import RegionFactory
from tests.harness import region_env
from tests.proxy import TcpProxy


@pytest.fixture
async def cut_cassandra(topics: Settings) -> AsyncIterator[tuple[TcpProxy, Settings]]:
    """A proxy in front of Cassandra, cut from the start, and settings that go through it."""
    proxy = TcpProxy(topics.cassandra.contact_points[0], topics.cassandra.port)
    port = await proxy.start()
    proxy.cut()
    settings = topics.model_copy(update={
        "cassandra": topics.cassandra.model_copy(update={"port": port, "request_timeout_s": 1.0}),
        "intake": topics.intake.model_copy(update={"catalog_ttl_s": 0.2, "catalog_max_stale_s": 120.0}),
    })  # fmt: skip
    try:
        yield proxy, settings
    finally:
        await proxy.close()


async def _get(url: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(url)


def _award(board: str, user: str = "ann") -> dict[str, object]:
    return {
        "leaderboardId": board,
        "matchId": uuid.uuid4().hex,
        "userId": user,
        "awardType": "kill",
        "delta": 2,
    }


async def test_intake_started_without_cassandra_answers_store_unavailable_then_serves(
    region_factory: RegionFactory, cut_cassandra: tuple[TcpProxy, Settings]
) -> None:
    proxy, settings = cut_cassandra
    region = await region_factory(settings, services=("intake",), until="/healthz")
    board = Board(f"o-{uuid.uuid4().hex[:8]}", "Outage", settings.region)
    await region.create_board(board)  # straight to Cassandra, not through the proxy

    not_ready = await _get(region.health_url("intake") + "/readyz")
    refused = await region.client.send(_award(board.id))

    assert not_ready.status_code == 503 and not_ready.json()["missing"] == ["cassandra", "catalog", "erasures"]
    assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1
    error = refused.json()["error"]
    assert error["code"] == "store_unavailable" and board.id in error["message"]
    assert "NoHost" not in error["message"] and "Error" not in error["message"]

    proxy.heal()
    await region.wait_ready("intake")
    assert (await region.client.send(_award(board.id))).status_code == 202

    proxy.cut()  # a later outage: boards already resolved keep being served, the others wait

    async def cassandra_reported_missing() -> bool:
        body = (await _get(region.health_url("intake") + "/readyz")).json()
        return bool(body["ready"] and body["missing"] == ["cassandra"])

    await region.wait_until(
        cassandra_reported_missing, within=60, what="readiness naming Cassandra as missing"
    )
    assert (await region.client.send(_award(board.id))).status_code == 202
    unseen = await region.client.send(_award("never-looked-up"))
    assert (unseen.status_code, unseen.json()["error"]["code"]) == (503, "store_unavailable")
    log = region.tail("intake", 10_000)
    assert "Traceback" not in log  # the driver's failed reconnections are logged on one line each
    assert log.count("Cassandra at") <= 3  # one line per interval, not one per attempt


async def test_intake_serves_a_cached_board_through_an_outage_only_up_to_the_hard_bound(
    region_factory: RegionFactory, cut_cassandra: tuple[TcpProxy, Settings]
) -> None:
    proxy, cut = cut_cassandra
    bound_s = 3.0
    intake = cut.intake.model_copy(update={"catalog_ttl_s": 0.5, "catalog_max_stale_s": bound_s})
    proxy.heal()
    region = await region_factory(cut.model_copy(update={"intake": intake}), services=("intake",))
    board = Board(f"o-{uuid.uuid4().hex[:8]}", "Outage", cut.region)
    await region.create_board(board)
    read = time.monotonic()  # the intake reads the board at its first award, not before
    assert (await region.client.send(_award(board.id))).status_code == 202

    proxy.cut()
    statuses: list[int] = []
    while not statuses or statuses[-1] == 202:
        response = await region.client.send(_award(board.id))
        statuses.append(response.status_code)
        assert time.monotonic() - read < bound_s + 5, f"still 202 {bound_s + 5} s into the outage"
    served_for = time.monotonic() - read

    assert len(statuses) > 1 and statuses[-1] == 503, statuses
    assert response.json()["error"]["code"] == "store_unavailable"
    assert bound_s <= served_for < bound_s + 2.5  # a failed read takes up to the request timeout (1 s)
    proxy.heal()

    async def served_again() -> bool:
        return (await region.client.send(_award(board.id))).status_code == 202

    await region.wait_until(served_again, within=60, what="the board served again once Cassandra is back")


async def test_audit_started_without_cassandra_reports_its_backlog_and_catches_up(
    region_factory: RegionFactory, cut_cassandra: tuple[TcpProxy, Settings], cassandra_session: Session
) -> None:
    proxy, cut = cut_cassandra
    region = await region_factory(services=("processor", "projector", "intake"))
    audit = await region_factory(cut, services=("audit",), until="/healthz")
    board = Board(f"o-{uuid.uuid4().hex[:8]}", "Outage", region.settings.region)
    await region.create_board(board)
    sent = [_award(board.id, f"p{i}") for i in range(12)]
    assert all(r.status_code == 202 for r in await asyncio.gather(*map(region.client.send, sent)))
    await region.wait_for_total(board.id, "p11", 2)

    async def backlog() -> float:
        metrics = (await _get(audit.health_url("audit") + "/metrics")).text
        return next(float(line.split()[1]) for line in metrics.splitlines()
                    if line.startswith("lb_audit_backlog_records "))  # fmt: skip

    async def all_in_backlog() -> bool:  # offsets: each transaction's commit marker counts too
        return await backlog() >= len(sent)

    async def no_backlog() -> bool:
        return await backlog() == 0

    await audit.wait_until(all_in_backlog, what="every award in the audit backlog while Cassandra is cut")
    ready = await _get(audit.health_url("audit") + "/readyz")
    assert ready.status_code == 503 and ready.json()["missing"] == ["cassandra", "erasures"]

    proxy.heal()
    rows = CassandraAudit(cassandra_session)
    ids = [event_id(board.id, str(a["matchId"]), str(a["userId"]), "kill") for a in sent]

    async def audited() -> bool:
        return all([await rows.count(i) == 1 for i in ids])

    await audit.wait_until(audited, within=60, what="an audit row for every award")
    await audit.wait_until(no_backlog, what="the audit backlog back to 0")
    await audit.wait_ready("audit")
    assert "lb_audit_rows_written_total 12.0" in (await _get(audit.health_url("audit") + "/metrics")).text


async def test_cli_without_cassandra_says_so_without_a_traceback(settings: Settings) -> None:
    unreachable = settings.model_copy(update={"cassandra": settings.cassandra.model_copy(
        update={"port": 1, "request_timeout_s": 1.0})})  # fmt: skip
    cli = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "regions.cli", "boards", env={**os.environ, **region_env(unreachable)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await cli.communicate()

    assert cli.returncode == 1 and out == b""
    assert "Traceback" not in err.decode()
    assert (
        err.decode().startswith("error: Cassandra at 127.0.0.1:1 keyspace") and "ops/services" in err.decode()
    )


async def test_lifecycle_worker_rides_out_a_cassandra_outage(
    region_factory: RegionFactory, cut_cassandra: tuple[TcpProxy, Settings]
) -> None:
    """The lifecycle worker reads the catalog every tick: a Cassandra that stops answering (the
    driver's NoHostAvailable, OperationTimedOut) makes it back off and retry, never exit."""
    proxy, cut = cut_cassandra
    proxy.heal()
    region = await region_factory(cut, services=("lifecycle",))
    board = Board(f"o-{uuid.uuid4().hex[:8]}", "Outage", region.settings.region)
    await region.create_board(board)
    proxy.cut()

    async def backed_off() -> bool:
        assert region.processes["lifecycle"].returncode is None, region.tail("lifecycle", 40)
        return "restarting from durable state" in region.tail("lifecycle", 200)

    await region.wait_until(backed_off, within=60, what="the lifecycle worker backing off from Cassandra")
    proxy.heal()
    await region.wait_ready("lifecycle")
    assert region.processes["lifecycle"].returncode is None
