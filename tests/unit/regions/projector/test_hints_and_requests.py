"""The projector's hints as the gateway's hub parses them, the rebuild record, and its printed progress."""

from gateway.core.hints import parse_hint
from regions.cli.projection import ProgressPrinter
from regions.core.boards import SortOrder, TiePolicy
from regions.projector.totals import ProjectableTotal
from regions.stores.redis.control import RebuildCause, RebuildRequest, RebuildState
from schema.hints import MAX_HINT_USERS, changes_hint, resync_hint, sequence_base


def _view(user: str) -> ProjectableTotal:
    return ProjectableTotal(board_id="b", user_id=user, total=3, version=2, reached="", sort_order=SortOrder.DESC,
                            tie_policy=TiePolicy.USER_ID)  # fmt: skip


def test_a_changes_hint_reads_back_as_the_hub_parses_it() -> None:
    hint = parse_hint(
        changes_hint(
            "b", 41, {("eu", 0): 7, ("us", 3): 2}, [_view(f"u{i}") for i in range(MAX_HINT_USERS + 1)]
        )
    )

    assert (hint.board_id, hint.sequence, hint.positions, hint.truncated, hint.resync) == (
        "b", 41, {("eu", 0): 7, ("us", 3): 2}, True, False,
    )  # fmt: skip
    assert len(hint.users) == MAX_HINT_USERS and hint.users[0].version == 2


def test_a_resync_hint_tells_the_hub_to_refetch() -> None:
    hint = parse_hint(resync_hint("b", 1_700_000_000_000_001))

    assert (hint.sequence, hint.resync, hint.positions, hint.users) == (1_700_000_000_000_001, True, {}, ())


def test_a_later_epoch_starts_above_every_sequence_an_earlier_one_could_reach() -> None:
    start_us, lasted_us = 1_767_225_600_000_000, 3_600_000_000  # 2026-01-01, one hour
    # At most one step per script call, and Redis runs far fewer than one call per microsecond.
    highest_before = sequence_base(start_us) + lasted_us - 1

    assert sequence_base(start_us + lasted_us) > highest_before
    assert 2 * start_us < 2**53  # a counter never outgrows the time since its key was made


def test_a_rebuild_request_survives_its_hash_and_a_half_written_one_is_none() -> None:
    request = RebuildRequest.new(RebuildCause.REQUESTED, "board-1").to(
        RebuildState.REPLAYING, done=3, total=9
    )
    items = request.encoded()
    raw = dict(zip(items[::2], items[1::2], strict=True))

    assert RebuildRequest.decoded(raw) == request and request.active
    assert RebuildRequest.decoded({"id": "x", "state": "done"}) is None
    assert not request.to(RebuildState.DONE).active


def test_progress_is_printed_by_steps_and_ends_at_100_percent_whatever_was_seen() -> None:
    lines: list[str] = []
    printer = ProgressPrinter(lines.append)
    request = RebuildRequest.new(RebuildCause.REQUESTED)
    for done in (0, 1, 2, 30, 31):
        printer.show(request.to(RebuildState.REPLAYING, done=done, total=100))
    printer.show(request.to(RebuildState.CATCHING_UP, done=100, total=100))
    printer.show(request.to(RebuildState.DONE, done=100, total=100, boards=2, records=100))

    assert lines == [
        "  replayed 0 of 100 totals offsets (0%)",
        "  replayed 30 of 100 totals offsets (30%)",
        "  replayed 100 of 100 totals offsets (100%)",
        "  catching up with the newest totals, then swapping the fresh keys in",
        "rebuilt 2 board(s) from 100 offsets of totals and swapped them in",
    ]
    late: list[str] = []
    ProgressPrinter(late.append).show(request.to(RebuildState.DONE, done=0, total=0, boards=0))
    assert late[0] == "  replayed 0 of 0 totals offsets (100%)"


def test_a_stopped_rebuild_is_said_once() -> None:
    lines: list[str] = []
    printer = ProgressPrinter(lines.append)
    stopped = RebuildRequest.new(RebuildCause.LOST).to(RebuildState.REPLAYING, error="KafkaConnectionError()")
    printer.show(stopped)
    printer.show(stopped)

    assert lines == [
        "  the rebuild stopped (KafkaConnectionError()); whoever holds the projection resumes it"
    ]


def test_a_hidden_or_removed_player_leaves_in_the_hint_without_a_score_and_a_restore_is_a_new_entry() -> None:
    hidden = ProjectableTotal(board_id="b", user_id="bob", total=140, version=5, reached="", sort_order=SortOrder.DESC,
                              tie_policy=TiePolicy.USER_ID, hidden=True)  # fmt: skip
    removed = ProjectableTotal(board_id="b", user_id="cat", total=0, version=3, reached="", sort_order=SortOrder.DESC,
                               tie_policy=TiePolicy.USER_ID, removed=True)  # fmt: skip
    shown = ProjectableTotal(board_id="b", user_id="bob", total=140, version=6, reached="", sort_order=SortOrder.DESC,
                             tie_policy=TiePolicy.USER_ID)  # fmt: skip

    raw = changes_hint("b", 7, {}, [hidden, removed])
    left = parse_hint(raw).users
    back = parse_hint(changes_hint("b", 8, {}, [shown])).users

    assert b"140" not in raw
    assert [(u.user_id, u.score, u.version, u.left) for u in left] == [
        ("bob", None, 5, True),
        ("cat", None, 3, True),
    ]
    assert [(u.user_id, u.score, u.version, u.left) for u in back] == [("bob", 140, 6, False)]
