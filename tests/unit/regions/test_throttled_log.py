"""Repeated log lines: one per interval and kind, the next one counting those held back."""

from __future__ import annotations

import logging
import sys

import pytest

from regions.runtime.logs import LibraryNoise, ThrottledLog


def test_repeats_within_the_interval_are_held_back_and_counted_into_the_next_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    throttled = ThrottledLog(logging.getLogger("test.throttled"), interval_s=10, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, "test.throttled"):
        for second in range(25):
            now[0] = float(second)
            throttled.log(logging.WARNING, "store", "catalog unavailable: %s", "timeout")
            throttled.log(logging.INFO, "unknown_board", "refused: unknown board")

    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert lines == [
        (logging.WARNING, "catalog unavailable: timeout"),
        (logging.INFO, "refused: unknown board"),
        (logging.WARNING, "catalog unavailable: timeout (and 9 more like it in the last 10s)"),
        (logging.INFO, "refused: unknown board (and 9 more like it in the last 10s)"),
        (logging.WARNING, "catalog unavailable: timeout (and 9 more like it in the last 10s)"),
        (logging.INFO, "refused: unknown board (and 9 more like it in the last 10s)"),
    ]


def test_library_records_pass_once_per_interval_on_one_line_without_traceback() -> None:
    now = [0.0]
    noise = LibraryNoise(("cassandra",), interval_s=30, clock=lambda: now[0])

    def record(name: str, level: int = logging.WARNING) -> logging.LogRecord:
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError:
            return logging.getLogger(name).makeRecord(
                name, level, __file__, 1, "Error connecting to %s:", ("127.0.0.1:9042",), sys.exc_info()
            )

    first = record("cassandra.cluster")
    assert noise.filter(first) and first.exc_info is None
    assert (
        first.getMessage()
        == "Error connecting to 127.0.0.1:9042: (ConnectionResetError(104, 'Connection reset by peer'))"
    )
    now[0] = 5
    assert not noise.filter(record("cassandra.cluster"))
    assert noise.filter(record("cassandra.cluster", logging.INFO))  # below WARNING: left alone
    assert noise.filter(record("aiokafka.conn"))  # other libraries: left alone
    now[0] = 31
    later = record("cassandra.cluster")
    assert noise.filter(later) and later.getMessage().endswith("(and 1 more like it in the last 31s)")
