"""The Python intake client against a real intake: signed awards, refusals named by field, and
failover to another region's intake when the first one is gone or silent."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest
from leaderboard_intake import (
    AsyncIntakeClient,
    Award,
    AwardRefused,
    IntakeClient,
    IntakeUnavailable,
    RetryPolicy,
)

from regions.core.boards import Board
from tests.conftest import RegionFactory
from tests.harness import Region, free_port, points
from tests.proxy import TcpProxy

FAST = RetryPolicy(attempts=6, failover_after=2, backoff_s=0.05, max_backoff_s=0.2)


@pytest.fixture
async def intake(region_factory: RegionFactory) -> Region:
    return await region_factory(services=("intake",))


async def _board(region: Region) -> str:
    board = Board(f"b-{uuid.uuid4().hex[:8]}", "Client board", region.settings.region)
    await region.create_board(board)
    return board.id


def _award(board: str, user: str = "ann", delta: int = 5) -> Award:
    return Award(board, user, uuid.uuid4().hex, "kill", delta=delta, occurred_at=datetime.now(UTC))


async def test_a_signed_award_and_a_batch_are_accepted_where_kafka_put_them(intake: Region) -> None:
    board = await _board(intake)
    async with AsyncIntakeClient([intake.intake_url], "dev", "dev-secret", policy=FAST) as client:
        one = await client.send(_award(board))
        batch = await client.send_batch([_award(board, "bob"), _award(board, "cy", 2)])

    assert one.region == intake.settings.region and len(one.event_id) == 32 and one.offset >= 0
    assert [a.region for a in batch] == [intake.settings.region] * 2 and not one.waited and one.applied is None
    assert len({one.event_id, *(a.event_id for a in batch)}) == 3


async def test_refusals_are_not_retried_and_name_each_field(intake: Region) -> None:
    board = await _board(intake)
    async with AsyncIntakeClient([intake.intake_url], "dev", "dev-secret", policy=FAST) as client:
        with pytest.raises(AwardRefused) as refused:
            await client.send(Award(board, " ", "m1", "kill", delta=1))
        with pytest.raises(AwardRefused) as unknown:
            await client.send(_award("no-such-board"))
    async with AsyncIntakeClient([intake.intake_url], "dev", "wrong-secret", policy=FAST) as client:
        with pytest.raises(AwardRefused) as forged:
            await client.send(_award(board))

    assert refused.value.status == 400 and refused.value.code == "invalid_field"
    assert [f.field for f in refused.value.fields] == ["userId"]
    assert (unknown.value.status, unknown.value.code) == (404, "unknown_board")
    assert forged.value.status == 403 and forged.value.code.startswith("auth_")


async def test_a_gone_intake_fails_over_to_the_next_and_the_client_stays_there(intake: Region) -> None:
    board = await _board(intake)
    gone = f"http://127.0.0.1:{free_port()}"  # nothing listens: connections are refused
    async with AsyncIntakeClient([gone, intake.intake_url], "dev", "dev-secret", policy=FAST) as client:
        first = await client.send(_award(board))
        assert client.current_endpoint == intake.intake_url
        second = await client.send(_award(board, "bob"))

    assert first.region == second.region == intake.settings.region


async def test_a_silent_intake_times_out_and_the_same_award_is_sent_to_the_next(intake: Region) -> None:
    board = await _board(intake)
    host, port = intake.intake_url.removeprefix("http://").split(":")
    silent = TcpProxy(host, int(port))
    await silent.start()
    silent.blackhole()  # connections open, nothing passes: every attempt there times out
    award = _award(board)
    try:
        async with AsyncIntakeClient(
            [f"http://127.0.0.1:{silent.port}", intake.intake_url], "dev", "dev-secret", policy=FAST, timeout_s=0.5
        ) as client:
            through_failover = await client.send(award)
        async with AsyncIntakeClient([intake.intake_url], "dev", "dev-secret", policy=FAST) as client:
            again = await client.send(award)  # the same award sent again: the same event id
    finally:
        await silent.close()

    assert through_failover.event_id == again.event_id


def test_the_blocking_client_retries_then_says_the_outcome_is_unknown() -> None:
    gone = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
    slept: list[float] = []
    with IntakeClient(gone, "dev", "dev-secret", policy=FAST, sleep=slept.append) as client, pytest.raises(IntakeUnavailable) as unavailable:
        client.send(_award("b-any"))

    assert unavailable.value.attempts == FAST.attempts and "ConnectError" in unavailable.value.last
    assert len(slept) == FAST.attempts and slept[0] == 0.0 and all(0 <= s <= FAST.max_backoff_s for s in slept)


async def test_the_blocking_client_sends_to_a_real_intake(intake: Region) -> None:
    board = await _board(intake)

    def send() -> str:
        with IntakeClient([intake.intake_url], "dev", "dev-secret", policy=FAST) as client:
            return client.send(_award(board)).region

    assert await asyncio.to_thread(send) == intake.settings.region


async def test_the_rank_an_award_reached_comes_back_with_wait_applied(region_factory: RegionFactory) -> None:
    region = await region_factory(services=("intake", "processor", "projector"))
    board = await _board(region)
    # Warm up: the first award waits for the processor's and projector's first rounds, which can take
    # longer than the longest wait on a slow machine (then applied is null, as the contract says).
    assert (await region.client.send(points(board, "warm", "zed", 1))).status_code == 202
    await region.wait_for_total(board, "zed", 1)
    async with AsyncIntakeClient([region.intake_url], "dev", "dev-secret", policy=FAST) as client:
        first = await client.send(_award(board, "ann", 5), wait_applied_ms=2000)
        second = await client.send(_award(board, "bob", 9), wait_applied_ms=2000)

    assert first.waited and second.waited
    assert first.applied is not None and (first.applied.score, first.applied.rank, first.applied.changed) == (5, 1, True)  # zed has 1
    assert second.applied is not None and (second.applied.rank, second.applied.shared_rank) == (1, 1)
