"""The pure rules of taking a player out of an archived result: closed up, and repaired after a
rewrite cut anywhere."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.erasure import closed_up, erasure_id, in_chunks, is_erasure, needs_rewrite
from regions.core.results import ResultEntry


def _result(players: int) -> list[ResultEntry]:
    return [ResultEntry(f"u{i}", 1000 - i, 1) for i in range(players)]


@given(st.integers(1, 40), st.data())
def test_a_rewrite_cut_after_any_chunk_is_repaired_by_closing_up_again(players: int, data: st.DataObject) -> None:
    size = data.draw(st.integers(1, 6))
    result = _result(players)
    gone = data.draw(st.sampled_from(result)).user_id
    wanted = [e for e in result if e.user_id != gone]
    written = data.draw(st.integers(0, len(in_chunks(wanted, size))))
    # chunks 0 .. written-1 hold the closed-up entries, the rest still the original ones
    mixed = wanted[: written * size] + result[written * size :]
    assert closed_up(mixed, gone) == wanted
    assert not needs_rewrite(wanted, gone)
    assert needs_rewrite(mixed, gone) == (mixed != wanted)


def test_chunks_hold_consecutive_ranks_of_the_given_size() -> None:
    result = _result(7)
    assert [(n, [e.user_id for e in part]) for n, part in in_chunks(result, 3)] == [
        (0, ["u0", "u1", "u2"]), (1, ["u3", "u4", "u5"]), (2, ["u6"])
    ]  # fmt: skip


def test_an_erasure_id_names_no_player_and_differs_per_board_and_version() -> None:
    ids = {erasure_id(b, "alice", v) for b in ("b1", "b2") for v in (1, 2)}
    assert len(ids) == 4
    assert all(is_erasure(i) and "alice" not in i for i in ids)
    assert not is_erasure("season-fix")
