"""The Redis encoding preserves rank order, and rank order is a strict total order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regions.core.boards import SortOrder, TiePolicy
from regions.core.ordering import (
    REACHED_WIDTH,
    encode,
    rank_key,
    reached_key,
    reached_position,
    total_of,
    user_of,
)
from regions.core.validation import MAX_EXACT
from tests.unit.regions.core.strategies import users

totals = st.integers(min_value=-(MAX_EXACT - 1), max_value=MAX_EXACT - 1)
event_ids = st.binary(min_size=16, max_size=16).map(bytes.hex)
times = st.integers(0, 2**43)
positions = st.builds(reached_key, times, event_ids) | st.builds(
    reached_position, times, st.integers(0, 2**15), st.integers(0, 2**47)
)
players = st.dictionaries(users, st.tuples(totals | st.integers(-3, 3), positions), min_size=1, max_size=40)


def _redis_order(score: float, member: str) -> tuple[float, bytes]:
    # Redis orders a sorted set by score, then by the member's bytes.
    return score, member.encode("utf-8")


@given(players, st.sampled_from(SortOrder), st.sampled_from(TiePolicy))
def test_redis_encoding_sorts_like_rank_order(
    entries: dict[str, tuple[int, str]], sort_order: SortOrder, tie: TiePolicy
) -> None:
    by_rank = sorted(entries, key=lambda u: rank_key(sort_order, tie, u, *entries[u]))
    by_redis = sorted(entries, key=lambda u: _redis_order(*encode(sort_order, tie, u, *entries[u])))
    assert by_rank == by_redis


# Every part of the encoding at its extremes: totals next to +-2^53 (the last exact floats), user ids
# at the UTF-8 length boundaries and one a prefix of others, the widest and narrowest positions.
EDGES = {
    "a": (MAX_EXACT - 1, reached_position(2**43, 2**15, 2**47)),
    "b": (MAX_EXACT - 2, reached_position(0, 0, 0)),
    "a|": (0, reached_position(0, 0, 1)),
    "a\U0010ffff": (0, reached_position(0, 0, 0)),
    "\uffff": (0, reached_position(0, 1, 0)),
    "\u07ff": (0, reached_position(1, 0, 0)),
    "\ud7ff": (-(MAX_EXACT - 2), reached_position(1, 0, 0)),
    "\ue000": (-(MAX_EXACT - 1), reached_position(0, 0, 0)),
}


@pytest.mark.parametrize("sort_order", SortOrder)
@pytest.mark.parametrize("tie", TiePolicy)
def test_redis_encoding_sorts_like_rank_order_at_its_edges(sort_order: SortOrder, tie: TiePolicy) -> None:
    by_rank = sorted(EDGES, key=lambda u: rank_key(sort_order, tie, u, *EDGES[u]))
    by_redis = sorted(EDGES, key=lambda u: _redis_order(*encode(sort_order, tie, u, *EDGES[u])))
    assert by_rank == by_redis


@given(players, st.sampled_from(SortOrder), st.sampled_from(TiePolicy))
def test_rank_order_is_strict_and_encoding_round_trips(
    entries: dict[str, tuple[int, str]], sort_order: SortOrder, tie: TiePolicy
) -> None:
    keys = {rank_key(sort_order, tie, u, *entries[u]) for u in entries}
    assert len(keys) == len(entries)
    for user, (total, reached) in entries.items():
        score, member = encode(sort_order, tie, user, total, reached)
        assert (user_of(tie, member), total_of(sort_order, score)) == (user, total)


def test_first_reached_beats_user_id_on_equal_totals() -> None:
    early, late = reached_position(1000, 0, 5), reached_position(2000, 0, 1)
    zed = rank_key(SortOrder.DESC, TiePolicy.FIRST_REACHED, "zed", 10, early)
    amy = rank_key(SortOrder.DESC, TiePolicy.FIRST_REACHED, "amy", 10, late)
    assert zed < amy
    assert rank_key(SortOrder.DESC, TiePolicy.USER_ID, "amy", 10, late) < rank_key(
        SortOrder.DESC, TiePolicy.USER_ID, "zed", 10, early
    )


@given(st.tuples(times, event_ids), st.tuples(times, event_ids))
def test_reached_keys_sort_by_acceptance_time_then_event_id(a: tuple[int, str], b: tuple[int, str]) -> None:
    ka, kb = reached_key(*a), reached_key(*b)
    assert len(ka) == len(kb) == REACHED_WIDTH
    assert (ka < kb) == ((a[0], a[1][:16]) < (b[0], b[1][:16]))
