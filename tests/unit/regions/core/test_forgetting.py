"""When the dedupe memory may forget: by the slowest source's stream time, never the wall clock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.forgetting import forget_before, should_forget, stream_time
from regions.core.positions import SourcePosition

KEEP = 1_000


def test_the_slowest_source_holds_the_memory_back() -> None:
    positions = {"eu": SourcePosition(9, 50_000, 51_000), "us": SourcePosition(3, 2_000, 0)}
    assert forget_before(positions, ["eu", "us"], KEEP) == 2_000 - KEEP
    assert forget_before(positions, ["eu"], KEEP) == 51_000 - KEEP


def test_a_region_never_read_forgets_nothing() -> None:
    assert forget_before({"eu": SourcePosition(9, 50_000)}, ["eu", "us"], KEEP) is None
    assert forget_before({"eu": SourcePosition(9, 0, 0)}, ["eu"], KEEP) is None  # only a gap was read
    assert forget_before({}, [], KEEP) is None


def test_a_heartbeat_moves_an_idle_source_on() -> None:
    assert stream_time(SourcePosition(4, 10, 99)) == 99


@given(st.dictionaries(st.sampled_from(["eu", "us", "ap"]), st.integers(1, 10**12), min_size=1))
def test_no_source_can_still_deliver_a_copy_within_the_horizon_of_what_is_forgotten(
    times: dict[str, int],
) -> None:
    positions = {r: SourcePosition(0, t) for r, t in times.items()}
    before = forget_before(positions, times, KEEP)
    assert before is not None
    # A copy still to come from any source is accepted at or after that source's stream time (up to
    # the margin inside KEEP), so it is at least KEEP after every forgotten copy.
    assert all(t - before >= KEEP for t in times.values())


def test_forgetting_goes_in_steps() -> None:
    assert should_forget(5_000, None, 60_000)
    assert not should_forget(None, None, 60_000)
    assert not should_forget(59_999, 0, 60_000)
    assert should_forget(60_000, 0, 60_000)
