"""The intake's count of awards in flight: refusals hold nothing, waiters are admitted in arrival
order as room frees, and one that gives up (its time, or its client gone) leaves nothing held."""

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
