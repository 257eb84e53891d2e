"""The admission rule: never over the bound, a reserved share for priority work, and a request
arriving when nothing is in flight always admitted; the bound that follows acknowledgement times."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regions.core.admission import AckTarget, Bound


def test_awards_are_admitted_up_to_the_bound_and_a_batch_counts_its_awards() -> None:
    bound = Bound(10)
    assert bound.admits(0, 10) and bound.admits(9, 1) and bound.admits(0, 1)
    assert not bound.admits(9, 2)  # a batch of 2 does not fit where one award does
    assert not bound.admits(10, 1) and bound.full(10) and not bound.full(9)


def test_a_batch_larger_than_the_bound_is_admitted_alone_only() -> None:
    bound = Bound(5)
    assert bound.admits(0, 50)
    assert not bound.admits(1, 50)


def test_the_reserved_share_admits_priority_work_only() -> None:
    bound = Bound(4, reserved=1)
    assert bound.admits(2) and not bound.admits(3)
    assert bound.admits(3, priority=True) and not bound.admits(4, priority=True)
    assert bound.full(3) and not bound.full(3, priority=True)


@pytest.mark.parametrize(("limit", "reserved"), [(0, 0), (3, 3), (3, -1)])
def test_a_bound_without_room_is_refused_naming_its_rule(limit: int, reserved: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        Bound(limit, reserved)


@given(
    st.integers(1, 50),
    st.integers(0, 10),
    st.lists(st.tuples(st.integers(1, 20), st.booleans(), st.booleans()), max_size=60),
)
def test_what_is_in_flight_never_exceeds_the_bound_but_for_one_lone_request(
    limit: int, reserved: int, steps: list[tuple[int, bool, bool]]
) -> None:
    """Arrivals and departures in any order: ordinary work never goes past ``limit - reserved``
    and priority work never past ``limit``, unless it arrived when nothing was in flight."""
    bound = Bound(limit, min(reserved, limit - 1))
    held: list[int] = []
    for cost, priority, leave in steps:
        if leave and held:
            held.pop(0)
            continue
        in_flight = sum(held)
        if bound.admits(in_flight, cost, priority):
            held.append(cost)
            ceiling = bound.limit if priority else bound.limit - bound.reserved
            assert in_flight == 0 or in_flight + cost <= ceiling
        else:
            assert in_flight > 0


def _window(target: AckTarget, seconds: float, in_flight: int, samples: int = 10) -> int | None:
    """One window: ``samples`` acknowledgements of ``seconds`` each over 0.3 s (the last closes it),
    with ``in_flight`` at its peak; what it changed."""
    target.in_flight(in_flight)
    start = _clock[0]
    changed = None
    for i in range(samples):
        _clock[0] = start + 0.01 + 0.3 * i / (samples - 1)
        changed = target.acknowledged(seconds, _clock[0])
    return changed


_clock = [0.0]


def test_slow_acknowledgements_lower_the_bound_in_proportion_by_half_at_most_and_never_under_the_floor() -> None:
    target = AckTarget(ceiling=400, target_s=0.1, floor=20)
    assert _window(target, 0.125, 400) == 320  # p90 25 % over: the bound shrinks by a fifth
    assert _window(target, 1.0, 400) == 160  # ten times over: by half, no more
    for _ in range(4):
        _window(target, 1.0, 400)
    assert target.limit == 20  # the floor


def test_fast_acknowledgements_raise_the_bound_only_while_it_is_reached() -> None:
    target = AckTarget(ceiling=100, target_s=0.1, floor=20)
    assert _window(target, 1.0, 100) == 50
    assert _window(target, 0.01, 20) is None  # far from the bound: nothing to learn
    assert _window(target, 0.01, 45) == 56  # the bound reached (90 %): a tenth more, plus one
    while target.limit < 100:
        _window(target, 0.01, target.limit)
    assert target.limit == 100  # up to the ceiling, not over
    assert _window(target, 0.01, 100) is None


def test_a_window_needs_its_time_and_its_samples() -> None:
    target = AckTarget(ceiling=100, target_s=0.1)
    target.in_flight(100)
    assert all(target.acknowledged(1.0, 0.01 * i) is None for i in range(20))  # 20 samples in 0.19 s
    assert target.acknowledged(1.0, 0.3) == 50  # the window opened with its first sample
    assert all(target.acknowledged(1.0, 10.0 + i) is None for i in range(9))  # 9 samples in 8 s
    assert target.acknowledged(1.0, 20.0) == 25


def test_the_p90_not_the_worst_decides() -> None:
    target = AckTarget(ceiling=100, target_s=0.1)
    target.in_flight(100)
    for i in range(10):  # one acknowledgement in ten is slow: the p90 is fast
        target.acknowledged(5.0 if i == 9 else 0.01, 0.03 * (i + 1))
    assert target.limit == 100


def test_a_floor_over_the_ceiling_is_the_ceiling_and_bad_arguments_are_refused() -> None:
    assert AckTarget(ceiling=3, target_s=0.1).floor == 3
    with pytest.raises(ValueError, match="ceiling"):
        AckTarget(ceiling=0, target_s=0.1)
    with pytest.raises(ValueError, match="target_s"):
        AckTarget(ceiling=10, target_s=0)
