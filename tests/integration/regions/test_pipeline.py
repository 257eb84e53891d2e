"""Awards through the real intake, processor, projector and audit sink of one region."""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
from cassandra.cluster import Session

from regions.core.boards import Aggregation, Board, SortOrder, TiePolicy
from regions.stores.cassandra.audit import CassandraAudit
from regions.stores.redis.reads import RankReader
from schema.event_id import event_id
from tests.harness import Region


def award(
    board: str, user: str, amount: int, match: str | None = None, *, field: str = "delta"
) -> dict[str, object]:
    return {
        "leaderboardId": board,
        "matchId": match or uuid.uuid4().hex,
        "userId": user,
        "awardType": "kill",
        field: amount,
    }


async def _board(region: Region, **rules: object) -> Board:
    board = Board(f"b-{uuid.uuid4().hex[:8]}", "Test board", region.settings.region, **rules)  # type: ignore[arg-type]
    await region.create_board(board)
    return board


def _reader(region: Region) -> RankReader:
    return RankReader(region.projection, region.settings.redis.key_prefix, region.settings.region)


async def test_same_award_sent_ten_times_concurrently_counts_once(
    region: Region, cassandra_session: Session
) -> None:
    board = await _board(region)
    same = award(board.id, "alice", 7, "match-1")

    responses = await asyncio.gather(*(region.client.send(same) for _ in range(10)))

    assert [r.status_code for r in responses] == [202] * 10
    assert len({r.json()["accepted"][0]["eventId"] for r in responses}) == 1
    await region.client.send(award(board.id, "alice", 1))  # a later award proves the repeats were processed
    await region.wait_for_total(board.id, "alice", 8)
    eid = event_id(board.id, "match-1", "alice", "kill")
    audit = CassandraAudit(cassandra_session)
    await region.wait_until(lambda: _rows_exist(audit, eid), what="audit row")
    assert await audit.count(eid) == 1


async def _rows_exist(audit: CassandraAudit, eid: str) -> bool:
    return await audit.count(eid) == 1


async def test_conflicting_repeat_changes_nothing_and_is_reconciled(region: Region) -> None:
    board = await _board(region)
    assert (await region.client.send(award(board.id, "bob", 5, "m1"))).status_code == 202
    conflict = await region.client.send(award(board.id, "bob", 500, "m1"))
    assert conflict.status_code == 202  # durable acceptance; the processor judges it
    await region.client.send(award(board.id, "bob", 1, "m2"))
    await region.wait_for_total(board.id, "bob", 6)

    async def reconciled() -> bool:
        return any(getattr(r, "reason", "") == "conflicting_repeat" for r in await region.reconciliation())

    await region.wait_until(reconciled, what="conflict in reconciliation")
    records = [r for r in await region.reconciliation() if getattr(r, "reason", "") == "conflicting_repeat"]
    assert len(records) == 1 and records[0].award.amount == 500  # type: ignore[attr-defined]


async def test_ties_follow_user_id_policy(region: Region) -> None:
    board = await _board(region, tie_policy=TiePolicy.USER_ID)
    for user, points in [("carol", 10), ("alice", 10), ("bob", 10), ("dave", 12)]:
        await region.client.send(award(board.id, user, points))
    for user, points in [("carol", 10), ("alice", 10), ("bob", 10), ("dave", 12)]:
        await region.wait_for_total(board.id, user, points)  # partitions are processed independently

    page = await _reader(region).top(board, 10)

    assert [(e.rank, e.user_id, e.score) for e in page.entries] == [
        (1, "dave", 12), (2, "alice", 10), (3, "bob", 10), (4, "carol", 10),
    ]  # fmt: skip


async def test_ties_follow_first_reached_policy(region: Region) -> None:
    board = await _board(region, tie_policy=TiePolicy.FIRST_REACHED, aggregation=Aggregation.MAX)
    for user in ["zed", "mia", "amy"]:  # zed reaches 10 first, amy last
        assert (await region.client.send(award(board.id, user, 10, field="score"))).status_code == 202
        await region.wait_for_total(board.id, user, 10)
        await asyncio.sleep(0.01)
    # A lower score leaves the best at 10: mia keeps her first-reached time.
    assert (await region.client.send(award(board.id, "mia", 3, field="score"))).status_code == 202

    async def applied() -> bool:
        return await region.projection.version_of(board.id, "mia") == 2

    await region.wait_until(applied, what="mia's second award applied")
    page = await _reader(region).top(board, 10)

    assert [e.user_id for e in page.entries] == ["zed", "mia", "amy"]


async def test_best_of_ascending_board_keeps_the_lowest_score(region: Region) -> None:
    board = await _board(region, aggregation=Aggregation.MIN, sort_order=SortOrder.ASC)
    for user, time_ms in [("ann", 9000), ("ann", 7000), ("ann", 8000), ("ben", 7500)]:
        assert (await region.client.send(award(board.id, user, time_ms, field="score"))).status_code == 202
    await region.wait_for_total(board.id, "ben", 7500)
    await region.wait_for_total(board.id, "ann", 7000)

    page = await _reader(region).top(board, 10)

    assert [(e.user_id, e.score, e.version) for e in page.entries] == [("ann", 7000, 3), ("ben", 7500, 1)]


async def test_neighbor_windows_are_shorter_at_the_top_and_bottom(region: Region) -> None:
    board = await _board(region)
    response = await region.client.send({"awards": [award(board.id, f"p{i}", i) for i in range(1, 8)]})
    assert response.status_code == 202 and len(response.json()["accepted"]) == 7
    for i in range(1, 8):  # the players hash to different partitions, each projected on its own
        await region.wait_for_total(board.id, f"p{i}", i)
    reader = _reader(region)

    top = await reader.context(board, "p7", 2)
    bottom = await reader.context(board, "p1", 2)
    middle = await reader.context(board, "p4", 2)

    assert top is not None and bottom is not None and middle is not None
    assert (top.player.rank, [e.user_id for e in top.above], [e.user_id for e in top.below]) == (
        1,
        [],
        ["p6", "p5"],
    )
    assert (bottom.player.rank, [e.user_id for e in bottom.above], bottom.below) == (7, ["p3", "p2"], [])
    assert ([e.user_id for e in middle.above], [e.user_id for e in middle.below]) == (
        ["p6", "p5"],
        ["p3", "p2"],
    )
    assert await reader.context(board, "nobody", 2) is None


async def test_award_is_visible_once_as_of_covers_its_offset(region: Region) -> None:
    board = await _board(region)
    reader = _reader(region)
    expected = 0
    for points in [3, 5, 11, 13]:
        accepted = (await region.client.send(award(board.id, "eve", points))).json()["accepted"][0]
        expected += points
        partition, offset = accepted["partition"], accepted["offset"]

        async def covered(p: int = partition, o: int = offset) -> bool:
            return (await reader.as_of()).positions.get((region.settings.region, p), -1) >= o

        await region.wait_until(covered, what=f"asOf covering {partition}:{offset}")
        entry, as_of = await reader.player(board, "eve")
        assert as_of.positions[(region.settings.region, partition)] >= offset and not as_of.stale
        assert entry is not None and entry.score == expected


async def test_every_process_reports_health_readiness_and_lag(region: Region) -> None:
    board = await _board(region)
    await region.client.send(award(board.id, "zoe", 1))
    await region.wait_for_total(board.id, "zoe", 1)
    async with httpx.AsyncClient() as http:
        for service in ("intake", "processor", "projector", "audit"):
            base = region.health_url(service)
            ready = await http.get(base + "/readyz")
            assert ready.status_code == 200 and ready.json()["ready"] is True
            assert (await http.get(base + "/healthz")).json()["alive"] is True
        partitions = {str(p) for p in range(region.settings.kafka.partitions)}
        awards = region.settings.kafka.topic("awards")

        async def lag_of_every_partition() -> bool:  # lag is reported every 2 s
            health = (await http.get(region.health_url("processor") + "/healthz")).json()
            return set(health["lag"].get(awards, {})) == partitions

        await region.wait_until(lag_of_every_partition, within=30, what="lag of every awards partition")
        metrics = (await http.get(region.health_url("processor") + "/metrics")).text
    assert 'lb_consumer_lag{partition="0",service="processor"' in metrics


async def test_each_worker_runs_at_the_cpu_priority_its_settings_give_the_audit_lower_than_the_intake(
    region: Region,
) -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)
    s = region.settings
    assert s.audit.niceness > 0
    for service, niceness in (("audit", s.audit.niceness), ("processor", s.processor.niceness),
                              ("projector", s.projector.niceness)):  # fmt: skip
        assert os.getpriority(os.PRIO_PROCESS, region.processes[service].pid) == min(19, own + niceness)
    assert os.getpriority(os.PRIO_PROCESS, region.processes["intake"].pid) == own


def _metric(text: str, sample: str) -> float:
    """The value of one sample (name and labels as Prometheus prints them); 0 when absent."""
    return next(
        (float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(sample + " ")), 0.0
    )


async def test_every_process_counts_its_work_in_metrics(region: Region) -> None:
    board = await _board(region)
    first = award(board.id, "ann", 3, "m1")
    for payload in [first, award(board.id, "ann", 4), award(board.id, "bob", 5), first]:
        assert (await region.client.send(payload)).status_code == 202
    assert (await region.client.send(award(board.id, " ", 1))).status_code == 400
    await region.client.send(award(board.id, "cy", 1))  # after the repeat: proves it was processed
    await region.wait_for_total(board.id, "cy", 1)

    async def scrape(service: str) -> str:
        async with httpx.AsyncClient() as http:
            return (await http.get(region.health_url(service) + "/metrics")).text

    async def audited() -> bool:
        text = await scrape("audit")
        return (
            _metric(text, "lb_audit_rows_written_total") == 4
            and _metric(text, "lb_audit_backlog_records") == 0
        )

    await region.wait_until(audited, what="four audit rows written and no backlog left")
    intake, processor = await scrape("intake"), await scrape("processor")
    assert _metric(intake, 'lb_intake_requests_total{outcome="accepted"}') == 5
    assert _metric(intake, 'lb_intake_requests_total{outcome="invalid_field"}') == 1
    assert _metric(intake, "lb_intake_awards_accepted_total") == 5
    assert _metric(intake, "lb_intake_request_seconds_count") == 6
    assert _metric(processor, "lb_processor_awards_applied_total") == 4
    assert _metric(processor, "lb_processor_repeats_ignored_total") == 1
    assert _metric(processor, "lb_processor_transaction_seconds_count") >= 1
