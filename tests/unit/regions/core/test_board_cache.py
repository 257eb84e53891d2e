"""The board cache rule: TTL, stale-while-revalidate, bounded unknown ids, last answer on failure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.board_cache import BoardCache, Hit, Miss
from regions.core.boards import Board

BOARD = Board("b1", "One", "local")


def test_a_fresh_answer_is_served_then_a_stale_board_is_served_while_one_refresh_runs() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10)
    assert cache.lookup("b1", now=0) == Miss()
    cache.answered("b1", BOARD, now=0)

    assert cache.lookup("b1", now=1.9) == Hit(BOARD)
    assert cache.lookup("b1", now=2.0) == Hit(BOARD, refresh=True)
    assert cache.lookup("b1", now=2.1) == Hit(BOARD)  # the refresh is already running
    cache.answered("b1", BOARD, now=2.5)
    assert cache.lookup("b1", now=4.4) == Hit(BOARD)


def test_an_unknown_id_is_remembered_for_the_ttl_then_asked_again() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10)
    cache.answered("nope", None, now=0)

    assert cache.lookup("nope", now=1.0) == Hit(None)
    assert cache.lookup("nope", now=2.0) == Miss()


def test_unknown_ids_are_bounded_and_the_least_recently_asked_goes_first() -> None:
    cache = BoardCache(ttl_s=60.0, max_unknown=3)
    cache.answered("b1", BOARD, now=0)
    for i in range(3):
        cache.answered(f"u{i}", None, now=0)
    assert cache.lookup("u0", now=1) == Hit(None)  # u0 is now the most recently asked

    cache.answered("u3", None, now=1)

    assert cache.unknown_ids() == 3
    assert cache.lookup("u1", now=1) == Miss()
    assert cache.lookup("u0", now=1) == Hit(None)
    assert cache.lookup("b1", now=1) == Hit(BOARD)  # known boards are never pushed out by unknown ids


def test_an_unreachable_catalog_serves_the_last_answer_and_retries_after_the_ttl() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10)
    cache.answered("b1", BOARD, now=0)
    cache.answered("gone", None, now=0)
    assert cache.lookup("b1", now=5) == Hit(BOARD, refresh=True)

    assert cache.unreachable("b1", now=5) == Hit(BOARD)
    assert cache.lookup("b1", now=6) == Hit(BOARD)  # no refresh storm while the catalog is down
    assert cache.lookup("b1", now=7) == Hit(BOARD, refresh=True)
    assert cache.lookup("gone", now=5) == Miss()
    assert cache.unreachable("gone", now=5) == Hit(None)
    assert cache.unreachable("never-seen", now=5) is None


def test_a_board_created_after_its_id_was_unknown_is_served_at_once() -> None:
    cache = BoardCache(ttl_s=60.0, max_unknown=10)
    cache.answered("b1", None, now=0)
    cache.answered("b1", BOARD, now=1)

    assert cache.lookup("b1", now=2) == Hit(BOARD)
    assert cache.unknown_ids() == 0


ids = st.sampled_from([f"b{i}" for i in range(8)])
steps = st.lists(
    st.tuples(st.sampled_from(["lookup", "found", "absent", "down"]), ids, st.floats(0, 3)), max_size=60
)


@given(steps, st.integers(1, 4))
def test_whatever_happens_unknown_ids_stay_bounded_and_one_refresh_at_a_time(
    operations: list[tuple[str, str, float]], max_unknown: int
) -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=max_unknown)
    now, refreshing = 0.0, set[str]()
    for op, board_id, dt in operations:
        now += dt
        if op == "lookup":
            result = cache.lookup(board_id, now)
            if isinstance(result, Hit) and result.refresh:
                assert board_id not in refreshing
                refreshing.add(board_id)
        elif op == "down":
            cache.unreachable(board_id, now)
            refreshing.discard(board_id)
        else:
            cache.answered(board_id, Board(board_id, "B", "local") if op == "found" else None, now)
            refreshing.discard(board_id)
        assert cache.unknown_ids() <= max_unknown


def test_a_forgotten_board_is_read_from_the_catalog_again_at_once() -> None:
    cache = BoardCache(ttl_s=60.0, max_unknown=10)
    cache.answered("b1", BOARD, now=0)
    cache.answered("nope", None, now=0)

    cache.forget("b1")
    cache.forget("nope")

    assert cache.lookup("b1", now=1) == Miss() and cache.lookup("nope", now=1) == Miss()
