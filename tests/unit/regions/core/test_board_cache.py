"""The board cache rule: an answer older than the TTL is never served while the catalog answers,
refresh ahead of expiry, bounded unknown ids, the last answer up to a hard bound while the catalog is
unreachable."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.board_cache import BoardCache, Down, Hit, Miss
from regions.core.boards import Board, BoardStatus

BOARD = Board("b1", "One", "local")
CLOSING = Board("b1", "One", "local", status=BoardStatus.CLOSING)


def test_an_answer_older_than_the_ttl_is_read_again_before_it_is_served() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10)
    cache.answered("b1", BOARD, read_at=0)

    assert cache.lookup("b1", now=5) == Miss()  # idle past the TTL: never the stale OPEN board
    assert cache.lookup("b1", now=5) == Miss()  # every lookup waits for the read (one, by the caller)
    cache.answered("b1", CLOSING, read_at=5)
    assert cache.lookup("b1", now=5.1) == Hit(CLOSING)


def test_a_board_in_steady_use_is_refreshed_in_the_background_before_it_expires() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10)
    assert cache.lookup("b1", now=0) == Miss()
    cache.answered("b1", BOARD, read_at=0)

    assert cache.lookup("b1", now=0.9) == Hit(BOARD)
    assert cache.lookup("b1", now=1.0) == Hit(BOARD, refresh=True)
    assert cache.lookup("b1", now=1.5) == Hit(BOARD)  # the refresh is already running
    assert cache.lookup("b1", now=2.0) == Miss()  # it has not answered in time: wait for it
    cache.answered("b1", BOARD, read_at=1.0)
    assert cache.lookup("b1", now=1.9) == Hit(BOARD)
    assert cache.lookup("b1", now=2.9) == Hit(BOARD, refresh=True)
    assert cache.lookup("b1", now=3.0) == Miss()  # the age counts from when the read began


def test_a_read_begun_before_a_newer_answer_does_not_replace_it() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10)
    cache.answered("b1", CLOSING, read_at=3)  # learned here: this process closed it
    cache.answered("b1", BOARD, read_at=2)  # a refresh begun before the close

    assert cache.lookup("b1", now=3.5) == Hit(CLOSING)


@given(st.floats(0, 100), st.floats(0, 100), st.floats(0.01, 10))
def test_while_the_catalog_answers_no_answer_older_than_the_ttl_is_served(
    read_at: float, later: float, ttl_s: float
) -> None:
    cache = BoardCache(ttl_s=ttl_s, max_unknown=10, max_stale_s=1000)
    cache.answered("b1", BOARD, read_at=read_at)

    now = read_at + later
    found = cache.lookup("b1", now=now)

    assert isinstance(found, Hit) == (now - read_at < ttl_s)


def test_an_unknown_id_is_remembered_for_the_ttl_then_asked_again() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10)
    cache.answered("nope", None, read_at=0)

    assert cache.lookup("nope", now=1.0) == Hit(None)
    assert cache.lookup("nope", now=2.0) == Miss()


def test_unknown_ids_are_bounded_and_the_least_recently_asked_goes_first() -> None:
    cache = BoardCache(ttl_s=60.0, max_unknown=3)
    cache.answered("b1", BOARD, read_at=0)
    for i in range(3):
        cache.answered(f"u{i}", None, read_at=0)
    assert cache.lookup("u0", now=1) == Hit(None)  # u0 is now the most recently asked

    cache.answered("u3", None, read_at=1)

    assert cache.unknown_ids() == 3
    assert cache.lookup("u1", now=1) == Miss()
    assert cache.lookup("u0", now=1) == Hit(None)
    assert cache.lookup("b1", now=1) == Hit(BOARD)  # known boards are never pushed out by unknown ids


def test_an_unreachable_catalog_serves_the_last_answer_up_to_the_hard_bound() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10, max_stale_s=10.0)
    cache.answered("b1", BOARD, read_at=0)
    assert cache.lookup("b1", now=3) == Miss()

    assert cache.unreachable("b1", now=3) == Hit(BOARD)
    assert cache.lookup("b1", now=4) == Hit(BOARD)  # no read while the catalog is down...
    assert cache.lookup("b1", now=5) == Hit(BOARD, refresh=True)  # ...but one per TTL, in the background
    assert cache.lookup("b1", now=5.5) == Hit(BOARD)
    assert cache.unreachable("b1", now=6) == Hit(BOARD)
    assert cache.lookup("b1", now=8) == Hit(BOARD, refresh=True)
    assert cache.unreachable("b1", now=8) == Hit(BOARD)
    assert cache.lookup("b1", now=9.9) == Hit(BOARD)

    assert cache.lookup("b1", now=10) == Miss()  # past the bound: only a fresh answer is served
    assert cache.unreachable("b1", now=10) is None
    assert cache.lookup("b1", now=11) == Down()  # failing at once, not asking on every lookup
    assert cache.lookup("b1", now=12) == Miss()  # asked again once per TTL
    cache.answered("b1", CLOSING, read_at=12)
    assert cache.lookup("b1", now=12.5) == Hit(CLOSING)


def test_an_unreachable_catalog_serves_remembered_unknown_ids_up_to_the_bound_and_nothing_else() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10, max_stale_s=10.0)
    cache.answered("gone", None, read_at=0)

    assert cache.lookup("gone", now=5) == Miss()
    assert cache.unreachable("gone", now=5) == Hit(None)
    assert cache.unreachable("gone", now=10) is None
    assert cache.unreachable("never-seen", now=5) is None


def test_the_hard_bound_is_never_shorter_than_the_ttl() -> None:
    cache = BoardCache(ttl_s=2.0, max_unknown=10, max_stale_s=0.0)
    cache.answered("b1", BOARD, read_at=0)
    assert cache.lookup("b1", now=1.0) == Hit(BOARD, refresh=True)

    assert cache.unreachable("b1", now=1.5) == Hit(BOARD)
    assert cache.unreachable("b1", now=2.0) is None


def test_a_board_created_after_its_id_was_unknown_is_served_at_once() -> None:
    cache = BoardCache(ttl_s=60.0, max_unknown=10)
    cache.answered("b1", None, read_at=0)
    cache.answered("b1", BOARD, read_at=1)

    assert cache.lookup("b1", now=2) == Hit(BOARD)
    assert cache.unknown_ids() == 0


ids = st.sampled_from([f"b{i}" for i in range(8)])
steps = st.lists(
    st.tuples(st.sampled_from(["lookup", "found", "absent", "down"]), ids, st.floats(0, 3)), max_size=60
)


@given(steps, st.integers(1, 4), st.floats(0, 20))
def test_whatever_happens_no_answer_past_its_bound_one_refresh_at_a_time_unknown_ids_bounded(
    operations: list[tuple[str, str, float]], max_unknown: int, max_stale_s: float
) -> None:
    ttl_s = 2.0
    cache = BoardCache(ttl_s=ttl_s, max_unknown=max_unknown, max_stale_s=max_stale_s)
    now, refreshing = 0.0, set[str]()
    read: dict[str, float] = {}  # the reference model: when each id's last answer was read
    down: set[str] = set()  # ids whose last read failed
    for op, board_id, dt in operations:
        now += dt
        if op == "lookup":
            result = cache.lookup(board_id, now)
            if isinstance(result, Hit):
                bound = max(ttl_s, max_stale_s) if board_id in down else ttl_s
                assert board_id in read and now - read[board_id] < bound
                if result.refresh:
                    assert board_id not in refreshing
                    refreshing.add(board_id)
        elif op == "down":
            cache.unreachable(board_id, now)
            refreshing.discard(board_id)
            down.add(board_id)
        else:
            cache.answered(board_id, Board(board_id, "B", "local") if op == "found" else None, now)
            refreshing.discard(board_id)
            down.discard(board_id)
            read[board_id] = now
        assert cache.unknown_ids() <= max_unknown


def test_a_forgotten_board_is_read_from_the_catalog_again_at_once() -> None:
    cache = BoardCache(ttl_s=60.0, max_unknown=10)
    cache.answered("b1", BOARD, read_at=0)
    cache.answered("nope", None, read_at=0)

    cache.forget("b1")
    cache.forget("nope")

    assert cache.lookup("b1", now=1) == Miss() and cache.lookup("nope", now=1) == Miss()
