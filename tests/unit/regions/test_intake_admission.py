"""The intake's count of awards in flight: refusals hold nothing, waiters are admitted in arrival
order as room frees, and one that gives up (its time, or its client gone) leaves nothing held; with
an acknowledgement target, slow acknowledgements lower the bound."""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY

from regions.intake.admission import AwardAdmission


async def test_over_the_bound_is_refused_at_once_holding_nothing() -> None:
    admission = AwardAdmission(3, wait_s=0)
    assert await admission.enter(2) and await admission.enter(1)
    assert admission.full()
    assert not await admission.enter(1)
    assert admission.in_flight == 3
    assert REGISTRY.get_sample_value("lb_intake_awards_in_flight") == 3
    admission.leave(2)
    assert not admission.full() and await admission.enter(2)


async def test_waiters_are_admitted_in_arrival_order_as_room_frees() -> None:
    admission = AwardAdmission(2, wait_s=5)
    assert await admission.enter(2)
    assert not admission.full()  # those allowed to wait are read, then wait for room
    first = asyncio.create_task(admission.enter(2))
    second = asyncio.create_task(admission.enter(1))
    await asyncio.sleep(0)
    admission.leave(2)
    assert await first and admission.in_flight == 2
    assert not second.done()  # behind the first, it waits though it came for less
    admission.leave(2)
    assert await second and admission.in_flight == 1


async def test_a_waiter_past_its_time_or_cancelled_holds_nothing() -> None:
    admission = AwardAdmission(1, wait_s=0.05)
    assert await admission.enter(1)
    assert not await admission.enter(1)  # waited its 50 ms
    gone = asyncio.create_task(admission.enter(1))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    admission.leave(1)
    assert admission.in_flight == 0


async def test_slow_acknowledgements_lower_the_bound_and_only_acknowledged_awards_count() -> None:
    admission = AwardAdmission(40, wait_s=0, ack_target_ms=10)
    assert REGISTRY.get_sample_value("lb_intake_awards_in_flight_limit") == 40
    for _ in range(10):  # not acknowledged (refused by a later check, or Kafka failed): no sample
        assert await admission.enter(1)
        admission.leave(1)
    for _ in range(10):
        assert await admission.enter(1)
    admission.leave(1, acknowledged_after_s=0.05)  # opens a window: it closes 0.25 s on at least
    await asyncio.sleep(0.3)
    assert admission.bound.limit == 40
    for _ in range(9):
        admission.leave(1, acknowledged_after_s=0.05)
    assert admission.bound.limit == 20  # five times the target: halved
    assert REGISTRY.get_sample_value("lb_intake_awards_in_flight_limit") == 20
    for _ in range(20):
        assert await admission.enter(1)
    assert admission.full() and not await admission.enter(1)
