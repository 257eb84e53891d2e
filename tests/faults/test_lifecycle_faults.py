"""The home processor and the lifecycle worker SIGKILLed while a board closes and while a correction is
published: the processor is down when the close (the correction) begins and starts again meanwhile
(for the correction with its disk wiped, so it restores from the changelogs), and the worker is
killed while the result's chunks are being written (one entry per chunk and a pause after each round
of writes, so the archive takes seconds). After the restarts the close and the correction complete,
and each archived version equals its oracle with every chunk once, none missing and none beyond the
last."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from datetime import UTC, datetime

from cassandra.cluster import Session

from regions.actions.correct import record_correction
from regions.core.boards import Board
from regions.core.corrections import CorrectionRequest, parse_correction
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from tests.conftest import RegionFactory
from tests.harness import Region
from tests.integration.regions.test_close import (
    Sent,
    _archived,
    _closed,
    _markers_written,
    _oracle,
    _processed,
    _settings,
)
from tests.integration.regions.test_corrections import corrected, correction_published, rows

PLAYERS = 500  # one chunk each: the archive writes 500 rows, 8 at a time, 30 ms apart


async def _fill(region: Region, board: Board, sent: Sent) -> None:
    for first in range(0, PLAYERS, 250):
        awards = [{"leaderboardId": board.id, "matchId": uuid.uuid4().hex, "userId": f"p{i:04d}",
                   "awardType": "kill", "delta": (i * 37) % 101 + 1} for i in range(first, first + 250)]  # fmt: skip
        response = await region.client.send({"awards": awards})
        assert response.status_code == 202, response.text
        for award, accepted in zip(awards, response.json()["accepted"], strict=True):
            sent.accepted.append((award, accepted["partition"], accepted["offset"]))


async def _kill_mid_archive(region: Region, results: CassandraResults, board_id: str, version: int) -> None:
    """SIGKILL the lifecycle worker once the version's first chunk is written, and check that it was
    indeed killed mid-archive: the header (written last) is not there, nor the last chunk."""

    async def writing() -> bool:
        return bool(await results.chunks(board_id, version, [0]))

    await region.wait_until(writing, within=60, what=f"version {version}'s chunks being written")
    await region.kill("lifecycle")
    assert await results.get(board_id, version) is None, (
        f"the archive ended before the kill: {region.tail('lifecycle')}"
    )
    assert not await results.chunks(board_id, version, [PLAYERS - 1])


async def _written(corrections: CassandraCorrections, board_id: str, correction_id: str) -> bool:
    entry = await corrections.get(board_id, correction_id)
    return entry is not None and entry.written is not None


async def test_a_close_and_a_correction_complete_after_kills_mid_archive(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    settings = _settings(topics, honour_cutoffs=True, catalog_ttl_s=1.0)
    slow = settings.lifecycle.model_copy(update={"chunk_size": 1, "fault_chunk_pause_ms": 30.0})
    settings = settings.model_copy(update={"lifecycle": slow})
    region = await region_factory(settings, services=("processor", "projector", "intake"))
    await region.start("lifecycle")
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    corrections = CassandraCorrections(cassandra_session)
    board = Board(f"crash-{uuid.uuid4().hex[:8]}", "crash", region.settings.region)
    await region.create_board(board)
    sent = Sent()
    await _fill(region, board, sent)
    await region.wait_until(lambda: _processed(region.settings, sent), what="awards processed")

    # The close: the processor killed before it, started again once the markers are written; the
    # worker killed mid-archive.
    await region.kill("processor")
    assert await lifecycle.begin_close(board.id, "crash", datetime.now(UTC))
    await region.wait_until(
        lambda: _markers_written(lifecycle, board.id, region.settings.region), what="markers"
    )
    starting = asyncio.create_task(region.start("processor"))
    await _kill_mid_archive(region, results, board.id, 1)
    await starting
    await region.start("lifecycle")
    await region.wait_until(
        lambda: _closed(lifecycle, board.id), within=120, what="CLOSED after the restarts"
    )
    v1 = await _archived(results, board.id)
    assert [(e.user_id, e.score, e.version) for e in v1] == _oracle(board, [a for a, _, _ in sent.accepted])

    # The correction: the processor killed before it and its disk wiped, started again once the
    # records are written; the worker killed mid-archive of version 2.
    await region.kill("processor")
    shutil.rmtree(region.settings.processor.store_dir)
    scores = {v1[0].user_id: 0, v1[PLAYERS // 2].user_id: 10_000, v1[-1].user_id: v1[1].score}
    request = parse_correction(board.id, "crash-fix", "recount", list(scores.items()))
    assert isinstance(request, CorrectionRequest)
    await record_correction(lifecycle, corrections, region.projection, region.settings.redis.key_prefix,
                            request, region=region.settings.region, now=datetime.now(UTC))  # fmt: skip
    await region.wait_until(lambda: _written(corrections, board.id, "crash-fix"), what="correction records")
    starting = asyncio.create_task(region.start("processor"))
    await _kill_mid_archive(region, results, board.id, 2)
    await starting
    await region.start("lifecycle")
    await region.wait_until(  # recorded after version 2's archive and the board's version
        lambda: correction_published(corrections, board.id, "crash-fix"),
        within=120,
        what="version 2 published after the restarts",
    )

    assert rows(await _archived(results, board.id, 2)) == corrected(board, v1, scores)
    assert rows(await _archived(results, board.id)) == rows(v1)
    record = await lifecycle.record(board.id)
    assert record is not None and record.result_version == 2
