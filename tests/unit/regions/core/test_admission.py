"""The admission rule: never over the bound, a reserved share for priority work, and a request
arriving when nothing is in flight always admitted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regions.core.admission import Bound


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
