"""Erasing a player's Cassandra rows on a real Cassandra: their history, profile and every archive
holding them (two versions of a board, a period, and a board archived before archives were indexed).
Afterwards the user id is in no row of any table, the other players' rows are as they were (their
archive ranks closed up), the newest versions lack the player, and erasing again changes nothing."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from cassandra.cluster import Session

from regions.actions.erase_rows import PlayerStores, erase_player_rows
from regions.core.boards import Board
from regions.core.corrections import Adjustment, CorrectionRequest
from regions.core.erasure import ErasureStatus, ErasureStep
from regions.core.periods import PeriodSpan
from regions.core.profiles import Profile
from regions.core.results import ResultEntry
from regions.stores.cassandra.audit import AuditRow
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.results import CassandraResults, ResultHeader, result_chunks
from schema.lifecycle import LifecycleCodec, ResultChunk
from schema.scoped import period_board_id

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
SIZE = 3  # entries per chunk: the players span several chunks
KEY = "2026-11-30"


def _entries(users: list[str]) -> list[ResultEntry]:
    return [ResultEntry(u, 100 - i, 1, "", f'{{"n":{i}}}' if i % 2 else "") for i, u in enumerate(users)]


def _history(user_id: str, board_id: str, i: int) -> AuditRow:
    return AuditRow(f"{board_id}-{user_id}-{i}", board_id, user_id, f"m{i}", "kill", i + 1, None, "local",
                    0, i, i + 1, i + 1, 1_764_000_000_000 + i)  # fmt: skip


async def _archive(stores: PlayerStores, board_id: str, version: int, entries: list[ResultEntry]) -> None:
    results = stores.archives.results
    chunks = result_chunks(entries, SIZE)
    await results.put_chunks(board_id, version, chunks)
    await results.put_header(ResultHeader(board_id, version, NOW, "close", len(entries), len(chunks), SIZE))


async def _closed_board(session: Session, stores: PlayerStores, board_id: str) -> None:
    lifecycle = stores.archives.lifecycle
    assert await CassandraCatalog(session).create(Board(board_id, board_id, "local"))
    assert await lifecycle.begin_close(board_id, "season", NOW)
    assert await lifecycle.finish_close(board_id, {}, 1, NOW)


async def _corrected(stores: PlayerStores, board_id: str, user_id: str, entries: list[ResultEntry]) -> None:
    """Version 2 of the board by a published correction adjusting ``user_id``."""
    a = stores.archives
    request = CorrectionRequest(board_id, "c1", "fix", (Adjustment(user_id, 1),))
    assert await a.corrections.record(request, 2, None, NOW)
    await _archive(stores, board_id, 2, entries)
    assert await a.lifecycle.publish_version(board_id, 2)
    await a.corrections.record_published(board_id, "c1", NOW)


def _unindexed(session: Session, board_id: str, entries: list[ResultEntry]) -> None:
    """A version as archives were written before their players were indexed."""
    encode = LifecycleCodec().encode
    for number, chunk in result_chunks(entries, SIZE):
        session.execute("INSERT INTO board_result_chunks (board_id, result_version, chunk, ranked) "
                        "VALUES (%s, 1, %s, %s)", (board_id, number, encode(chunk)))  # fmt: skip
    session.execute("INSERT INTO board_results (board_id, result_version, created_at, reason, player_count, "
                    "chunk_count, chunk_size) VALUES (%s, 1, %s, 'close', %s, %s, %s)",
                    (board_id, NOW, len(entries), -(-len(entries) // SIZE), SIZE))  # fmt: skip


def _every_row(session: Session) -> list[tuple[str, str]]:
    """(table, row) of every row of every table of the keyspace, read with no filter."""
    tables = session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (session.keyspace,)
    )
    return [(t.table_name, repr(row)) for t in tables for row in session.execute(f"SELECT * FROM {t.table_name}")]


async def _versions(stores: PlayerStores, board_id: str) -> dict[int, list[tuple[int, str, int, str]]]:
    """Every version of the board: (rank, user, score, metadata) of each entry, checked complete."""
    results, found = stores.archives.results, {}
    for header in await results.versions(board_id):
        chunks = await results.chunks(board_id, header.version, range(header.chunk_count + 1))
        assert sorted(chunks) == list(range(header.chunk_count)), "a chunk is missing, or one past the last"
        entries = [e for n in sorted(chunks) for e in chunks[n]]
        assert len(entries) == header.player_count
        found[header.version] = [(r, e.user_id, e.score, e.metadata) for r, e in enumerate(entries, 1)]
    return found


def _without(ranked: list[tuple[int, str, int, str]], user_id: str) -> list[tuple[int, str, int, str]]:
    """The oracle: the entries without the player, ranks closed up."""
    return [(r, u, s, m) for r, (_, u, s, m) in enumerate((e for e in ranked if e[1] != user_id), 1)]


@pytest.fixture
async def stores(cassandra_session: Session) -> PlayerStores:
    return PlayerStores.on(cassandra_session)


async def test_erased_player_is_in_no_row_and_others_keep_theirs(
    cassandra_session: Session, stores: PlayerStores
) -> None:
    tag = uuid.uuid4().hex[:8]
    gone, board, old = f"erased-{tag}", f"erase-{tag}", f"erase-old-{tag}"
    period = period_board_id(board, KEY)
    others = [f"p{i}-{tag}" for i in range(7)]
    await _closed_board(cassandra_session, stores, board)
    await _archive(stores, board, 1, _entries([*others[:3], gone, *others[3:]]))
    await _corrected(stores, board, gone, _entries([*others[:5], gone, *others[5:]]))
    assert await stores.archives.periods.begin(board, PeriodSpan(KEY, 0, 1), NOW)
    assert await stores.archives.periods.finish_close(period, {}, 1, NOW)
    await _archive(stores, period, 1, _entries([gone, *others[:4]]))
    await _closed_board(cassandra_session, stores, old)
    _unindexed(cassandra_session, old, _entries([*others[:2], gone]))
    assert all(e is None for e in await stores.audit.write_many(
        [_history(u, board, i) for u in (gone, others[0]) for i in range(3)]))  # fmt: skip
    await stores.profiles.put(Profile(gone, "Gone"))
    await stores.profiles.put(Profile(others[0], "Stays"))
    before = {b: await _versions(stores, b) for b in (board, period, old)}
    kept_history = await stores.audit.rows_of(others[0])

    steps = await erase_player_rows(stores, gone, now=NOW)

    assert [(s.store, s.status) for s in steps] == [
        ("award_history", "DONE"), ("profiles", "DONE"), ("archives", "DONE"), ("moderation", "DONE")
    ], steps
    assert steps[0].detail == "3 rows deleted" and steps[1].detail == "1 row deleted"
    assert steps[2].detail.startswith("3 boards: 3 versions published without the player, 4 rewritten, 1 ")
    rows = _every_row(cassandra_session)
    assert [r for r in rows if gone in r[1]] == []
    assert any(others[0] in r for t, r in rows if t == "award_history")  # the scan did read the rows
    after = {b: await _versions(stores, b) for b in (board, period, old)}
    assert after[board] == {v: _without(before[board][min(v, 2)], gone) for v in (1, 2, 3)}
    assert after[period] == {v: _without(before[period][1], gone) for v in (1, 2)}
    assert after[old] == {v: _without(before[old][1], gone) for v in (1, 2)}
    assert (await stores.archives.lifecycle.record(board)).result_version == 3  # type: ignore[union-attr]
    assert (await stores.archives.periods.between(board, KEY, KEY))[KEY].result_version == 2
    assert await stores.audit.rows_of(others[0]) == kept_history
    assert set(await stores.profiles.get_many([gone, others[0]])) == {others[0]}
    assert (await stores.archives.corrections.get(board, "c1")).adjustments == ()  # type: ignore[union-attr]

    again = await erase_player_rows(stores, gone, now=NOW)

    assert [(s.store, s.status, s.detail) for s in again] == [
        ("award_history", ErasureStatus.DONE, "0 rows deleted"),
        ("profiles", ErasureStatus.DONE, "0 rows deleted"),
        ("archives", ErasureStatus.DONE,
         "0 boards: 0 versions published without the player, 0 rewritten, 0 corrections' adjustments of "
         "the player removed"),
        ("moderation", ErasureStatus.DONE, "0 actions deleted"),
    ]  # fmt: skip
    assert sorted(_every_row(cassandra_session)) == sorted(rows)


class CutResults(CassandraResults):
    """Results whose first rewrite of version 1 stops after its first chunk, as a crash would."""

    cut = False

    async def put_chunks(self, board_id: str, version: int, chunks: list[tuple[int, ResultChunk]]) -> None:
        if version == 1 and not self.cut:
            self.cut = True
            await super().put_chunks(board_id, version, chunks[:1])
            raise RuntimeError("cut after the first chunk")
        await super().put_chunks(board_id, version, chunks)


async def test_an_erasure_cut_in_the_middle_of_a_rewrite_is_finished_by_the_next(
    cassandra_session: Session, stores: PlayerStores
) -> None:
    """Version 2 is published without the player, then the rewrite of version 1 stops after one
    chunk (one player is then in two chunks); erasing again makes version 1 whole, publishes no
    version 3, and leaves the user id nowhere."""
    tag = uuid.uuid4().hex[:8]
    gone, board = f"erased-{tag}", f"erase-cut-{tag}"
    others = [f"p{i}-{tag}" for i in range(6)]
    await _closed_board(cassandra_session, stores, board)
    await _archive(stores, board, 1, _entries([gone, *others]))
    cut = replace(stores, archives=replace(stores.archives, results=CutResults(cassandra_session)))

    first = await erase_player_rows(cut, gone, now=NOW)

    assert (first[2].status, first[2].detail) == ("FAILED", "RuntimeError: cut after the first chunk; erase the player again")
    half = await _versions(stores, board)
    assert [u for _, u, _, _ in half[1]][:4] == [others[0], others[1], others[2], others[2]]
    assert [u for _, u, _, _ in half[2]] == others

    steps = await erase_player_rows(stores, gone, now=NOW)

    assert steps[2] == ErasureStep("archives", "DONE", "1 boards: 0 versions published without the player, "
                                   "1 rewritten, 0 corrections' adjustments of the player removed"), steps  # fmt: skip
    versions = await _versions(stores, board)
    assert versions == {1: _without(half[2], gone), 2: _without(half[2], gone)}
    assert [r for r in _every_row(cassandra_session) if gone in r[1]] == []


async def test_an_erased_item_leaves_an_approximate_boards_chart_with_its_estimates_kept(
    cassandra_session: Session, stores: PlayerStores
) -> None:
    """The chart without the item, published and rewritten, keeps the other items' verified counts
    and the result's error bound: the sketch keeps what the item counted."""
    tag = uuid.uuid4().hex[:8]
    gone, board = f"erased-{tag}", f"erase-chart-{tag}"
    items = [f"song{i}-{tag}" for i in range(5)]
    chart = [ResultEntry(u, 50 - i, 3, verified_count=50 - i if i % 2 else None)
             for i, u in enumerate([items[0], gone, *items[1:]])]  # fmt: skip
    await _closed_board(cassandra_session, stores, board)
    results = stores.archives.results
    chunks = result_chunks(chart, SIZE)
    await results.put_chunks(board, 1, chunks)
    await results.put_header(ResultHeader(board, 1, NOW, "close", len(chart), len(chunks), SIZE, error_bound=7))

    steps = await erase_player_rows(stores, gone, now=NOW)

    assert steps[2].detail.startswith("1 boards: 1 versions published without the player, 1 rewritten"), steps
    kept = [e for e in chart if e.user_id != gone]
    for version in (1, 2):
        header = await results.get(board, version)
        assert header is not None and (header.error_bound, header.player_count) == (7, len(kept))
        assert await results.all_entries(header) == kept
