"""Pages of an archived result come from exactly the chunks that hold their ranks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.results import ResultEntry, chunk_count, page, page_chunks


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
