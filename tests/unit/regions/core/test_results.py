"""Pages of an archived result come from exactly the chunks that hold their ranks; an approximate
board's result is its chart, with its candidates' verified counts kept apart from metadata."""

from __future__ import annotations

import math

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from regions.core.approximate import ApproximateSpec
from regions.core.boards import Board
from regions.core.candidates import Shown, exact_note, shown
from regions.core.results import (
    ResultEntry,
    TieStart,
    archived_count,
    archived_entry,
    chunk_count,
    holds_estimates,
    page,
    page_chunks,
    page_shared_ranks,
)
from regions.stores.cassandra.results import result_chunk
from schema.lifecycle import LifecycleCodec


@given(
    players=st.integers(0, 60),
    size=st.integers(1, 9),
    after=st.integers(0, 70),
    first=st.integers(0, 30),
)
def test_a_page_reads_only_its_chunks_and_holds_exactly_its_ranks(
    players: int, size: int, after: int, first: int
) -> None:
    entries = [ResultEntry(f"u{i:03d}", 1000 - i, 1) for i in range(players)]
    chunks = {n: entries[n * size : (n + 1) * size] for n in range(chunk_count(players, size))}
    needed = page_chunks(after, first, size, players)
    assert set(needed) <= set(chunks)
    got = page({n: chunks[n] for n in needed}, after, first, size)
    expected = [(rank, e) for rank, e in enumerate(entries, start=1) if after < rank <= after + first]
    assert got == expected


@given(
    scores=st.lists(st.integers(0, 4), min_size=1, max_size=80).map(lambda s: sorted(s, reverse=True)),
    size=st.integers(1, 9),
    data=st.data(),
)
def test_shared_ranks_of_a_page_come_from_a_bounded_search_back_to_the_start_of_its_tie(
    scores: list[int], size: int, data: st.DataObject
) -> None:
    entries = [ResultEntry(f"u{i:03d}", s, 1) for i, s in enumerate(scores)]
    chunks = {n: entries[n * size : (n + 1) * size] for n in range(chunk_count(len(entries), size))}
    after = data.draw(st.integers(0, len(entries) - 1))
    found = page(chunks, after, 10, size)
    search, read = TieStart(after + 1, found[0][1].score, size), []
    while (number := search.probe()) is not None:
        read.append(number)
        search.seen(number, chunks[number])
    shared = page_shared_ranks(found, search.start)

    assert shared == [1 + sum(1 for s in scores if s > e.score) for _, e in found]  # 1, 1, 3
    assert len(read) <= 3 + math.log2(after // size + 1)


EXACT = Board("season", "Season", "eu")
TRENDING = Board("trending", "Trending", "eu", approximate=ApproximateSpec(3, 0.01, 0.01))


def test_an_approximate_boards_candidate_is_archived_with_its_verified_count_apart_from_metadata() -> None:
    # the projection keeps a candidate's verified count where an exact board keeps an award's metadata
    assert archived_entry(TRENDING, 1, ("song1", "-40", "7", exact_note(38))) == ResultEntry(
        "song1", 40, 7, verified_count=38
    )
    assert archived_entry(TRENDING, 2, ("song2", "-30", "3", None)) == ResultEntry("song2", 30, 3)
    # an exact board's metadata is the award's, whatever it holds
    assert archived_entry(EXACT, 1, ("ann", "-40", "7", '{"exact":3}')) == ResultEntry(
        "ann", 40, 7, metadata='{"exact":3}'
    )


def test_an_estimated_entry_shows_its_verified_count_and_never_it_as_metadata() -> None:
    verified = ResultEntry("song1", 40, 7, verified_count=38)
    assert verified.shown(estimated=True) == Shown("", 38) and verified.shown(estimated=True).verified
    unverified = ResultEntry("song2", 30, 3).shown(estimated=True)
    assert unverified == Shown("", None) and not unverified.verified
    # a result archived before the count was kept apart held it as metadata: shown as the count
    older = ResultEntry("song3", 20, 2, metadata=exact_note(19))
    assert older.shown(estimated=True) == Shown("", 19)
    # on an exact result the score is exact and the metadata the award's, even one named "exact"
    assert older.shown(estimated=False) == Shown(exact_note(19), 20) and older.shown(estimated=False).verified
    # live entries read the same way: an approximate board's projection holds the note
    assert shown(40, exact_note(38), estimated=True) == Shown("", 38)
    assert shown(40, '{"level":2}', estimated=False) == Shown('{"level":2}', 40)


@given(candidates=st.integers(0, 50), k=st.integers(1, 20))
def test_an_approximate_boards_result_holds_its_best_k_and_an_exact_boards_every_player(
    candidates: int, k: int
) -> None:
    assert archived_count(candidates, ApproximateSpec(k, 0.01, 0.01)) == min(candidates, k)
    assert archived_count(candidates, None) == candidates


def test_a_result_holds_estimates_when_it_has_an_error_bound_or_its_board_is_approximate() -> None:
    assert holds_estimates(0, approximate=False) and holds_estimates(12, approximate=True)
    assert holds_estimates(None, approximate=True)  # archived before results kept the bound
    assert not holds_estimates(None, approximate=False)


def test_verified_counts_travel_in_a_chunk_that_older_readers_still_decode() -> None:
    entries = [ResultEntry("song1", 40, 7, verified_count=38), ResultEntry("song2", 30, 3),
               ResultEntry("ann", 20, 2, metadata='{"level":2}')]  # fmt: skip
    chunk = result_chunk(1, entries)
    codec = LifecycleCodec()
    assert codec.chunk(codec.encode(chunk)) == chunk and chunk.verified == {0: 38}

    class Older(msgspec.Struct, frozen=True, array_like=True):  # a chunk as readers before it knew it
        first_rank: int
        entries: list[tuple[str, int, int, str]]
        metadata: dict[int, str] = msgspec.field(default_factory=dict)

    older = msgspec.msgpack.decode(codec.encode(chunk), type=Older)
    assert (older.entries, older.metadata) == (chunk.entries, {2: '{"level":2}'})
    assert codec.chunk(codec.encode(Older(1, chunk.entries))).verified == {}
