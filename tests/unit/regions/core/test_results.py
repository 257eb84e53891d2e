"""Pages of an archived result come from exactly the chunks that hold their ranks."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from regions.core.results import ResultEntry, TieStart, chunk_count, page, page_chunks, page_shared_ranks


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
