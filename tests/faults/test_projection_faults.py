"""The projection under load while Redis is wiped and while an operator rebuilds it, read through the
gateway: every answer is checked against the acknowledged awards its asOf claims (I5), versions never
go backwards between answers (I3), and a subscriber's hint sequence never restarts.

Each test has a Redis server of its own, so wiping it (FLUSHALL) touches nobody else's keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

from regions.core.boards import Board
from regions.runtime.settings import Settings
from regions.stores.redis.layouts import Layout
from regions.stores.redis.projection import RedisProjection
from tests.conftest import RegionFactory
from tests.e2e.gateway.conftest import GatewayProcess, start_gateway
from tests.faults.reads import ReadHistory, check_covered, check_versions, load, read, subscribe
from tests.harness import Region, free_port

PLAYERS = [f"p{i:02d}" for i in range(20)]


@pytest.fixture
async def own_redis(tmp_path: Path) -> AsyncIterator[str]:
    """A Redis server for this test alone (no persistence: a wipe loses everything)."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", str(tmp_path), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    client = Redis.from_url(url)
    try:

        async def answers() -> bool:
            with contextlib.suppress(RedisError):
                return bool(await client.ping())
            return False

        await Region.wait_until(answers, within=10, what="the test's redis-server answering")
        yield url
    finally:
        await client.aclose()
        server.terminate()
        await server.wait()


@pytest.fixture
def settings(settings: Settings, own_redis: str) -> Settings:
    """This test's Redis; small projector batches, so that replays take many steps."""
    return settings.model_copy(update={
        "redis": settings.redis.model_copy(update={"url": own_redis}),
        "projector": settings.projector.model_copy(update={"max_batch": 100}),
    })  # fmt: skip


class Traffic:
    """Awards, three readers and a subscriber, recording into one history."""

    def __init__(self, region: Region, gateway: GatewayProcess, board: str) -> None:
        self.history, self.no_more_awards, self._stop = ReadHistory(), asyncio.Event(), asyncio.Event()
        self._tasks = [
            asyncio.create_task(load(region.client, board, PLAYERS, self.history, self.no_more_awards)),
            *(
                asyncio.create_task(read(gateway.url, board, PLAYERS, self.history, self._stop))
                for _ in range(3)
            ),
        ]
        self._subscriber = asyncio.create_task(
            subscribe(gateway.ws_url, board, PLAYERS[0], self.history, self._stop)
        )

    async def wait(self, check: Callable[[], bool | Awaitable[bool]], what: str, within: float = 90) -> None:
        """Wait for ``check`` to hold; raise at once what stopped a client, if one stopped."""

        async def holds() -> bool:
            for task in [*self._tasks, self._subscriber]:
                if task.done() and task.exception() is not None:
                    raise AssertionError(f"a client stopped while waiting for {what}") from task.exception()
            held = check()
            return held if isinstance(held, bool) else await held

        try:
            await Region.wait_until(holds, within=within, what=what)
        except TimeoutError as exc:
            h = self.history
            raise TimeoutError(
                f"{exc}: {len(h.acked)} awards acknowledged, {len(h.answers)} answers "
                f"({sum(a.stale for a in h.answers)} stale), {len(h.updates)} updates"
            ) from None

    async def close(self) -> None:
        self.no_more_awards.set()
        self._stop.set()
        self._subscriber.cancel()
        outcomes = await asyncio.gather(*self._tasks, self._subscriber, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                raise outcome


@contextlib.asynccontextmanager
async def _traffic(region: Region, gateway: GatewayProcess, board: str) -> AsyncIterator[Traffic]:
    traffic = Traffic(region, gateway, board)
    try:
        yield traffic
    finally:
        await traffic.close()


async def _converge(traffic: Traffic) -> None:
    traffic.no_more_awards.set()
    since = time.monotonic()
    await traffic.wait(
        lambda: traffic.history.covers(since), "a non-stale read covering every acknowledged award"
    )


def _check(history: ReadHistory) -> None:
    problems = check_covered(history) + check_versions(history)
    stale = sum(a.stale for a in history.answers)
    print(f"checked {len(history.answers)} answers ({stale} stale) against {len(history.acked)} awards")
    assert not problems, f"{len(problems)} problem(s) in {len(history.answers)} answers:\n" + "\n".join(
        problems[:20]
    )


def _sequences(history: ReadHistory, start: float, end: float) -> list[int]:
    return [u["sequence"] for at, u in history.updates if start <= at <= end]


def _resyncs(history: ReadHistory, since: float = 0.0) -> list[str]:
    return [u["reason"] for at, u in history.updates if at >= since and u["__typename"] == "Resync"]


async def recover_from(
    traffic: Traffic, projection: RedisProjection, wipe: Callable[[], Awaitable[object]], what: str
) -> tuple[float, int]:
    """Run ``wipe``, then wait for evidence that the projector noticed it and recovered: an epoch
    begun after it and rebuilt (``what``), its rebuild's Resync, reads after that covering every
    award acknowledged before, hint sequences above every one before. (Signs that merely follow the
    wipe in time are not enough: a read asked after it may have read Redis before the wipe, and the
    next wipe would land on a projector that has not noticed this one yet.) Returns when the wipe
    began and how many awards were acknowledged by then."""
    history = traffic.history
    lost = (await projection.positions()).epoch
    assert lost is not None  # recovered from the previous wipe
    before, wiped = len(history.acked), time.monotonic()
    sequences_before = _sequences(history, 0, wiped)
    await wipe()

    async def recovered() -> bool:
        positions = await projection.positions()
        return positions.epoch not in (None, lost) and not positions.rebuilding

    await traffic.wait(recovered, what)
    recovered_at = time.monotonic()
    await traffic.wait(
        lambda: "rebuilt" in _resyncs(history, wiped), "a Resync telling the subscriber to refetch"
    )
    await traffic.wait(
        lambda: history.covers(recovered_at, before), "reads covering every award from before the wipe"
    )
    rebuilt_at = next(at for at, u in history.updates if at >= wiped and u.get("reason") == "rebuilt")
    assert min(_sequences(history, rebuilt_at, time.monotonic())) > max(sequences_before)
    return wiped, before


async def _wipe_and_recover(traffic: Traffic, projection: RedisProjection) -> float:
    """FLUSHALL and recover from it (``recover_from``), then awards acknowledged after it. Returns
    when the wipe began."""
    wiped, before = await recover_from(
        traffic, projection, projection.redis.flushall, "a new epoch, rebuilt after the wipe"
    )
    await traffic.wait(lambda: len(traffic.history.acked) > before, "awards acknowledged after the wipe")
    return wiped


async def _warm(traffic: Traffic) -> None:
    history = traffic.history
    await traffic.wait(lambda: len(history.acked) >= 400 and history.covers(0, 400), "warm-up")
    await traffic.wait(lambda: bool(history.updates), "the subscriber's first update")


@contextlib.asynccontextmanager
async def _under_load(
    region_factory: RegionFactory, tmp_path: Path, shards: int = 1
) -> AsyncIterator[tuple[Region, str, Traffic]]:
    """A region, its gateway (answers never cached) and warmed-up traffic on one board. At the end
    the awards stop, the reads converge, and every answer and update is checked."""
    region = await region_factory(services=("processor", "projector", "intake"))
    board = Board(
        f"pf-{uuid.uuid4().hex[:8]}", "Projection fault board", region.settings.region, shards=shards
    )
    await region.create_board(board)
    async with (
        start_gateway(region.env, tmp_path / "gateway.log", LB_GATEWAY__TOP_CACHE_TTL_S="0") as gateway,
        _traffic(region, gateway, board.id) as traffic,
    ):
        await _warm(traffic)
        yield region, board.id, traffic
        await _converge(traffic)
    assert "sequence_reset" not in _resyncs(traffic.history)
    _check(traffic.history)


async def test_reads_during_redis_wipes_never_claim_what_they_lack(
    region_factory: RegionFactory, tmp_path: Path
) -> None:
    async with _under_load(region_factory, tmp_path) as (region, _, traffic):
        wiped = [await _wipe_and_recover(traffic, region.projection) for _ in range(3)]
        # Readers ask all the time, so some read while Redis had lost the projection. (Not asked
        # of each wipe: the projector may recover from one before any reader asks again.)
        assert traffic.history.stale_between(wiped[0], time.monotonic()) > 0


async def _rebuild_under_load(region: Region, traffic: Traffic, args: list[str]) -> None:
    asked = time.monotonic()
    output = await _cli(region, args)
    assert "asked projector" in output and "100%)" in output, output
    assert "rebuilt 1 board(s)" in output, output
    await traffic.wait(lambda: "rebuilt" in _resyncs(traffic.history, asked), "a Resync after the rebuild")


async def test_operator_rebuilds_under_load_keep_reads_honest_and_versions_monotonic(
    region_factory: RegionFactory, tmp_path: Path
) -> None:
    async with _under_load(region_factory, tmp_path) as (region, board, traffic):
        warm = time.monotonic()
        for args in (["rebuild"], ["rebuild", "--board", board], ["rebuild"]):
            await _rebuild_under_load(region, traffic, args)

    assert traffic.history.stale_between(warm, time.monotonic()) == 0  # the live keys answered all along


async def _reshard_under_load(region: Region, traffic: Traffic, board: str, shards: int) -> None:
    asked = time.monotonic()
    output = await _cli(region, ["reshard", board, "--shards", str(shards)])
    assert "asked projector" in output and f"{board} now has {shards} shard(s)" in output, output
    assert "; 0 player(s) verified" not in output and "player(s) verified at their version" in output, output
    assert (await _layout(region, board)).shards == shards
    await traffic.wait(lambda: "rebuilt" in _resyncs(traffic.history, asked), "a Resync after the reshard")


async def test_resharding_under_load_keeps_reads_honest_and_totals_exact(
    region_factory: RegionFactory, tmp_path: Path
) -> None:
    async with _under_load(region_factory, tmp_path, shards=2) as (region, board, traffic):
        warm = time.monotonic()
        assert (await _layout(region, board)).shards == 2
        for shards in (3, 1, 4):
            await _reshard_under_load(region, traffic, board, shards)
        again = await _cli(region, ["reshard", board, "--shards", "4"])
        assert "nothing to do" in again, again

    assert traffic.history.stale_between(warm, time.monotonic()) == 0  # the live keys answered all along
    oracle: dict[str, int] = {}
    for award in traffic.history.acked:
        oracle[award.user] = oracle.get(award.user, 0) + award.amount
    assert {user: await region.total_of(board, user) for user in oracle} == oracle
    await region.wait_until(lambda: _no_retired(region), within=60, what="the swapped-out layouts deleted")


async def _layout(region: Region, board: str) -> Layout:
    region.projection.layouts.forget(board)
    layout = await region.projection.layouts.live_one(board)
    assert layout is not None
    return layout


async def _no_retired(region: Region) -> bool:
    return await region.projection.layouts.retired() == []


async def _cli(region: Region, args: list[str]) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "regions.cli", *args, env={**os.environ, **region.env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await process.communicate())[0].decode()
    assert process.returncode == 0, output
    return output
