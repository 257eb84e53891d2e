"""The supervisor's restart rule: backoff per recent exit, and the crash loop that ends it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.supervision import CrashPolicy, GiveUp, Restart, after_crash

POLICY = CrashPolicy(max_crashes=5, window_s=60, first_delay_s=1, max_delay_s=30)


def test_exits_in_quick_succession_back_off_then_end_as_a_crash_loop() -> None:
    remembered: tuple[float, ...] = ()
    decisions = []
    for now in [0, 2, 5, 10, 19]:
        remembered, decision = after_crash(POLICY, remembered, now)
        decisions.append(decision)
    assert decisions == [Restart(1, 1), Restart(2, 2), Restart(4, 3), Restart(8, 4), GiveUp(5)]


def test_exits_spread_out_beyond_the_window_are_restarted_at_once_forever() -> None:
    remembered: tuple[float, ...] = ()
    for now in range(0, 6000, 61):
        remembered, decision = after_crash(POLICY, remembered, now)
        assert decision == Restart(1, 1)


@given(st.lists(st.floats(min_value=0, max_value=10), max_size=40))
def test_delays_stay_within_bounds_and_only_a_full_window_gives_up(gaps: list[float]) -> None:
    remembered: tuple[float, ...] = ()
    now = 0.0
    for gap in gaps:
        now += gap
        remembered, decision = after_crash(POLICY, remembered, now)
        assert all(now - t < POLICY.window_s for t in remembered)
        if isinstance(decision, GiveUp):
            assert decision.crashes == len(remembered) >= POLICY.max_crashes
            return
        assert 1 <= decision.delay_s <= 30 and decision.crashes == len(remembered)
