"""The metrics the dashboards and alerts read that the services set from what they already know."""

from __future__ import annotations

from prometheus_client import REGISTRY

from regions.core.boards import Board, BoardStatus
from regions.lifecycle.metrics import report_closing
from regions.runtime.metrics import count_accepted
from regions.stores.cassandra.lifecycle import CloseRecord


def _closing(board: str) -> float | None:
    return REGISTRY.get_sample_value("lb_lifecycle_closing_seconds", {"board": board})


def test_closing_boards_show_their_age_and_leave_once_no_longer_closing() -> None:
    closing = Board(id="obs-closing", name="Closing", home_region="eu", status=BoardStatus.CLOSING)
    report_closing(
        [CloseRecord(closing, closing_at_ms=1_000), CloseRecord(Board("obs-open", "Open", "eu"))], 31_000
    )
    assert (_closing("obs-closing"), _closing("obs-open")) == (30.0, None)
    report_closing([CloseRecord(Board("obs-closing", "Closed", "eu", status=BoardStatus.CLOSED))], 32_000)
    assert _closing("obs-closing") is None


def test_accepted_awards_are_counted_per_board_and_in_all() -> None:
    def board(b: str) -> float:
        return REGISTRY.get_sample_value("lb_intake_board_awards_accepted_total", {"board": b}) or 0.0

    before = (
        REGISTRY.get_sample_value("lb_intake_awards_accepted_total") or 0.0,
        board("obs-a"),
        board("obs-b"),
    )
    count_accepted(["obs-a", "obs-b", "obs-a"])
    after = (REGISTRY.get_sample_value("lb_intake_awards_accepted_total"), board("obs-a"), board("obs-b"))
    assert [a - b for a, b in zip(after, before, strict=True)] == [3.0, 2.0, 1.0]
