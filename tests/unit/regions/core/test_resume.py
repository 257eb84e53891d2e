"""Where a reader of a trimmed log continues: from where it is, after a reported gap, or not by itself."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.resume import Gap, Resume, Rewound, resume

offsets = st.integers(min_value=0, max_value=10_000)


@given(offsets, offsets, offsets)
def test_resume_continues_reports_a_gap_or_refuses_a_rewound_log(at: int, a: int, b: int) -> None:
    log_start, log_end = min(a, b), max(a, b)
    outcome = resume(at, log_start, log_end)
    if at > log_end:
        assert outcome == Rewound(at, log_end)
    elif at < log_start:
        assert outcome == Gap(at, log_start) and outcome.missing == log_start - at > 0
    else:
        assert outcome == Resume(at)


def test_nothing_read_yet_and_the_log_already_deleted_some_is_a_gap() -> None:
    assert resume(0, 5, 9) == Gap(0, 5)
    assert resume(0, 0, 0) == Resume(0)
