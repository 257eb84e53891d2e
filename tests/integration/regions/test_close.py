"""Awards racing a board's close, through the real intake, processor, projector and lifecycle worker.

The intake keeps its catalog answers for a few seconds and the markers are written at once
(``marker_delay_s=0``): an intake that has not seen CLOSING yet accepts awards that land after the
markers, so every run has awards on both sides of the cutoffs. The checker's oracle comes from the
intake's 202 answers (partition and offset of each accepted award) and the markers' offsets read back
from the awards topic: the archived result must be the fold of exactly the awards before the cutoffs,
and every accepted award after them must be in reconciliation as ``late``.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sys
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from cassandra.cluster import Session

from regions.core.boards import Board, BoardStatus, SortOrder
from regions.core.ordering import rank_key
from regions.core.results import ResultEntry
from regions.runtime.settings import Settings
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from regions.stores.kafka.clients import replay
from regions.stores.redis.cutoffs import reached_cutoffs
from schema.redis_keys import cutoffs_key
from tests.conftest import RegionFactory
from tests.harness import Region

SENDERS = 6
USERS = [f"u{i:02d}" for i in range(12)]


def _settings(
    settings: Settings, *, honour_cutoffs: bool, catalog_ttl_s: float = 3.0, poll_interval_s: float = 0.2
) -> Settings:
    return settings.model_copy(update={
        "intake": settings.intake.model_copy(update={"catalog_ttl_s": catalog_ttl_s}),
        "processor": settings.processor.model_copy(update={"honour_cutoffs": honour_cutoffs}),
        "lifecycle": settings.lifecycle.model_copy(
            update={"marker_delay_s": 0.0, "poll_interval_s": poll_interval_s, "chunk_size": 5}
        ),
    })  # fmt: skip


@dataclass
class Sent:
    accepted: list[tuple[dict[str, object], int, int]] = field(
        default_factory=list
    )  # (award, partition, offset)
    refused: int = 0


async def _send_until_refused(region: Region, board: Board, rng: random.Random, sent: Sent) -> None:
    """One sender: awards one after another until the intake answers 409 board_closed."""
    while True:
        award = {"leaderboardId": board.id, "matchId": uuid.uuid4().hex, "userId": rng.choice(USERS),
                 "awardType": "kill", "delta": rng.randint(1, 50)}  # fmt: skip
        response = await region.client.send(award)
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "board_closed"
            sent.refused += 1
            return
        assert response.status_code == 202, response.text
        accepted = response.json()["accepted"][0]
        sent.accepted.append((award, accepted["partition"], accepted["offset"]))
        await asyncio.sleep(rng.uniform(0, 0.02))  # pacing of the traffic, not synchronisation


async def _race(region: Region, lifecycle: CassandraLifecycle, board: Board, seed: int) -> Sent:
    rng, sent = random.Random(seed), Sent()
    senders = [asyncio.create_task(_send_until_refused(region, board, random.Random(seed * 100 + i), sent))
               for i in range(SENDERS)]  # fmt: skip
    await region.wait_until(lambda: _some(sent), what="first awards accepted")
    await asyncio.sleep(rng.uniform(0, 0.5))  # close at a random point of the traffic
    assert await lifecycle.begin_close(board.id, f"seed {seed}", datetime.now(UTC))
    await asyncio.gather(*senders)
    return sent


async def _some(sent: Sent) -> bool:
    return bool(sent.accepted)


async def _cutoffs(settings: Settings, board_id: str) -> dict[int, int]:
    """Offset of the board's first cutoff marker in each partition of the awards topic."""
    topic, key = settings.kafka.topic("awards"), b"\x00cutoff|" + board_id.encode()
    found: dict[int, int] = {}

    async def keep(records: list[ConsumerRecord]) -> None:
        for r in records:
            if r.key == key:
                found.setdefault(r.partition, r.offset)

    await replay(settings.kafka, [TopicPartition(topic, p) for p in range(settings.kafka.partitions)], keep)
    return found


async def _processed(settings: Settings, sent: Sent) -> bool:
    """The processor committed past every accepted award (applied or reconciled)."""
    newest: dict[int, int] = {}
    for _, partition, offset in sent.accepted:
        newest[partition] = max(newest.get(partition, -1), offset)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        group = f"{settings.kafka.topic_prefix}.processor.{settings.region}"
        committed = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    topic = settings.kafka.topic("awards")
    return all(
        (meta := committed.get(TopicPartition(topic, p))) is not None and meta.offset > offset
        for p, offset in newest.items()
    )


async def _archived(results: CassandraResults, board_id: str, version: int = 1) -> list[ResultEntry]:
    """Every entry of an archived result: each chunk once, none missing and none beyond the last."""
    header = await results.get(board_id, version)
    assert header is not None
    chunks = await results.chunks(board_id, version, range(header.chunk_count + 1))
    assert sorted(chunks) == list(range(header.chunk_count)), "a chunk is missing, or one beyond the last"
    entries = [e for n in sorted(chunks) for e in chunks[n]]
    assert len(entries) == header.player_count
    return entries


def _oracle(board: Board, before: list[dict[str, object]]) -> list[tuple[str, int, int]]:
    totals: dict[str, tuple[int, int]] = {}
    for award in before:
        total, version = totals.get(str(award["userId"]), (0, 0))
        totals[str(award["userId"])] = (total + int(str(award["delta"])), version + 1)
    ranked = sorted(
        totals.items(), key=lambda kv: rank_key(board.sort_order, board.tie_policy, kv[0], kv[1][0], "")
    )
    return [(user, total, version) for user, (total, version) in ranked]


async def close_violations(
    region: Region, lifecycle: CassandraLifecycle, results: CassandraResults, board: Board, sent: Sent
) -> tuple[list[str], int]:
    """What breaks the close barrier (empty: nothing), and how many accepted awards were late."""
    await region.wait_until(lambda: _closed(lifecycle, board.id), within=60, what=f"{board.id} CLOSED")
    await region.wait_until(lambda: _processed(region.settings, sent), what="every accepted award processed")
    cutoffs = await _cutoffs(region.settings, board.id)
    assert sorted(cutoffs) == list(range(region.settings.kafka.partitions)), cutoffs
    before = [a for a, p, o in sent.accepted if o < cutoffs[p]]
    late = {str(a["matchId"]) for a, p, o in sent.accepted if o > cutoffs[p]}
    problems = []
    archived = [(e.user_id, e.score, e.version) for e in await _archived(results, board.id)]
    expected = _oracle(board, before)
    if archived != expected:
        problems.append(f"archived {archived} != fold of the awards before the cutoffs {expected}")
    reconciled = {r.award.match_id for r in await region.reconciliation()
                  if r.reason == "late" and r.award is not None and r.award.board_id == board.id}  # fmt: skip
    if reconciled != late:
        problems.append(f"late awards {sorted(late)} but reconciled as late {sorted(reconciled)}")
    record = await lifecycle.record(board.id)
    assert record is not None
    named = {int(where.rsplit(":", 1)[1]): offset for where, offset in record.cutoffs.items()}
    if named != cutoffs:
        problems.append(f"the catalog records cutoffs {named}, the awards topic holds {cutoffs}")
    return problems, len(late)


async def _closed(lifecycle: CassandraLifecycle, board_id: str) -> bool:
    record = await lifecycle.record(board_id)
    return record is not None and record.board.status is BoardStatus.CLOSED


async def _start(
    region_factory: RegionFactory, settings: Settings, honour_cutoffs: bool, **tuned: float
) -> Region:
    region = await region_factory(_settings(settings, honour_cutoffs=honour_cutoffs, **tuned),
                                  services=("processor", "projector", "intake"))  # fmt: skip
    await region.start("lifecycle")
    return region


async def test_awards_racing_the_close_count_exactly_before_the_cutoffs(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    region = await _start(region_factory, topics, honour_cutoffs=True)
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    late_total = 0
    for seed in range(4):
        order = SortOrder.DESC if seed % 2 == 0 else SortOrder.ASC
        board = Board(
            f"close-{uuid.uuid4().hex[:8]}", f"seed {seed}", region.settings.region, sort_order=order
        )
        await region.create_board(board)
        sent = await _race(region, lifecycle, board, seed)
        problems, late = await close_violations(region, lifecycle, results, board, sent)
        assert problems == [], f"seed {seed}: {problems}"
        assert sent.refused == SENDERS
        late_total += late
    assert late_total > 0, "no award landed after a cutoff: the race did not test the barrier"


async def test_the_checker_fails_when_late_awards_are_applied(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    region = await _start(region_factory, topics, honour_cutoffs=False)
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    board = Board(f"close-{uuid.uuid4().hex[:8]}", "no barrier", region.settings.region)
    await region.create_board(board)
    sent = await _race(region, lifecycle, board, seed=7)
    problems, late = await close_violations(region, lifecycle, results, board, sent)
    assert late > 0
    assert any(p.startswith("archived") for p in problems)
    assert any(p.startswith("late awards") for p in problems)


async def _send_batch(region: Region, board: Board, rng: random.Random, sent: Sent, n: int) -> None:
    awards = [{"leaderboardId": board.id, "matchId": uuid.uuid4().hex, "userId": f"p{rng.randrange(40):02d}",
               "awardType": "kill", "delta": rng.randint(1, 50)} for _ in range(n)]  # fmt: skip
    response = await region.client.send({"awards": awards})
    assert response.status_code == 202, response.text
    for award, accepted in zip(awards, response.json()["accepted"], strict=True):
        sent.accepted.append((award, accepted["partition"], accepted["offset"]))


async def _markers_written(lifecycle: CassandraLifecycle, board_id: str, region: str) -> bool:
    record = await lifecycle.record(board_id)
    return record is not None and region in record.markers


async def test_the_close_completes_after_the_processor_and_lifecycle_worker_are_killed(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    # A long catalog TTL: the intake keeps accepting the board after the close, so late awards reach
    # the restarted processor, which must know the cutoffs from its changelog alone (its disk is wiped).
    region = await _start(
        region_factory, topics, honour_cutoffs=True, catalog_ttl_s=60.0, poll_interval_s=1.0
    )
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    board = Board(f"close-{uuid.uuid4().hex[:8]}", "crash", region.settings.region)
    await region.create_board(board)
    rng, sent = random.Random(11), Sent()
    for _ in range(4):
        await _send_batch(region, board, rng, sent, 50)
    assert await lifecycle.begin_close(board.id, "crash test", datetime.now(UTC))
    await region.wait_until(lambda: _markers_written(lifecycle, board.id, region.settings.region),
                            what="markers written")  # fmt: skip
    await region.kill("lifecycle")  # right after its markers: before it could archive
    await region.wait_until(lambda: _cutoffs_reached(region, board.id), what="every cutoff reached")
    await region.kill("processor")
    shutil.rmtree(region.settings.processor.store_dir)
    await region.start("processor")
    for _ in range(2):
        await _send_batch(region, board, rng, sent, 25)  # all after the markers: late
    await region.start("lifecycle")

    problems, late = await close_violations(region, lifecycle, results, board, sent)

    assert problems == [] and late == 50
    record = await lifecycle.record(board.id)
    assert record is not None and record.result_version == 1 and record.close_reason == "crash test"


async def _cutoffs_reached(region: Region, board_id: str) -> bool:
    reached = await reached_cutoffs(region.projection.redis, region.settings.redis.key_prefix, board_id)
    return len(reached) == region.settings.kafka.partitions


async def test_a_rebuild_records_the_cutoffs_the_projection_reaches_again(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    """Redis lost a closing board's recorded cutoffs (with the rest of the projection): the rebuild
    from the totals topic records them again, or the close would wait for ever."""
    region = await _start(region_factory, topics, honour_cutoffs=True)
    lifecycle = CassandraLifecycle(cassandra_session)
    board = Board(f"close-{uuid.uuid4().hex[:8]}", "rebuild", "elsewhere")  # this region never archives it
    await region.create_board(board)
    sent = Sent()
    await _send_batch(region, board, random.Random(3), sent, 30)
    assert await lifecycle.begin_close(board.id, "rebuild", datetime.now(UTC))
    await region.wait_until(lambda: _cutoffs_reached(region, board.id), what="every cutoff reached")
    prefix = region.settings.redis.key_prefix
    reached = await reached_cutoffs(region.projection.redis, prefix, board.id)
    await region.projection.redis.delete(cutoffs_key(prefix, board.id))

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "regions.cli", "rebuild", "--board", board.id, env={**os.environ, **region.env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await process.communicate())[0].decode()

    assert process.returncode == 0, output
    assert await reached_cutoffs(region.projection.redis, prefix, board.id) == reached
