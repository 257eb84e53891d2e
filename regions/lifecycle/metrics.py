"""Prometheus metrics of the lifecycle worker (served on its /metrics)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Gauge

from regions.core.boards import BoardStatus
from regions.stores.cassandra.lifecycle import CloseRecord

CLOSING_SECONDS = Gauge(
    "lb_lifecycle_closing_seconds",
    "Time since a CLOSING board began closing, by board (only boards CLOSING at the last pass: a "
    "close takes the marker delay and a poll or two, so a growing value is a stuck close)",
    ["board"],
)

_shown: set[str] = set()


def report_closing(records: Iterable[CloseRecord], now_ms: int) -> None:
    """Set the gauge of every CLOSING board of one pass; boards no longer CLOSING are dropped."""
    closing = {
        r.board.id: max(0, now_ms - (r.closing_at_ms or now_ms)) / 1000
        for r in records
        if r.board.status is BoardStatus.CLOSING
    }
    for gone in _shown - closing.keys():
        CLOSING_SECONDS.remove(gone)
    for board, seconds in closing.items():
        CLOSING_SECONDS.labels(board).set(seconds)
    _shown.clear()
    _shown.update(closing)
