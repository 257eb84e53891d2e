"""The projector as a process on the real Kafka and Redis: records it cannot project, its metrics, and
who may write the projection."""

from __future__ import annotations

import asyncio

import httpx

from regions.stores.kafka.clients import make_producer
from regions.stores.redis.control import ProjectionControl
from schema.records import WATERMARK_KEY, Codec, PlayerTotal, Watermark, totals_key
from tests.conftest import RegionFactory
from tests.harness import Region


def _total(board: str, user: str, total: int, sort_order: str = "DESC") -> PlayerTotal:
    return PlayerTotal(board_id=board, user_id=user, total=total, version=1, reached="0" * 27,
                       sort_order=sort_order, tie_policy="USER_ID", source_partition=0, source_offset=0,
                       event_id="0" * 32)  # fmt: skip


async def _send_totals(region: Region, records: list[tuple[bytes, bytes]]) -> list[int]:
    """Write records to totals partition 0 as the processor would; returns their offsets."""
    producer = make_producer(region.settings.kafka)
    await producer.start()
    try:
        topic = region.settings.kafka.topic("totals")
        return [(await producer.send_and_wait(topic, v, key=k, partition=0)).offset for k, v in records]
    finally:
        await producer.stop()


async def _metric(region: Region, line_start: str) -> float | None:
    async with httpx.AsyncClient() as http:
        text = (await http.get(region.health_url("projector") + "/metrics")).text
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(line_start)]
    return values[0] if values else None


async def test_unprojectable_totals_are_reconciled_and_the_partition_goes_on(
    region_factory: RegionFactory,
) -> None:
    region = await region_factory(services=("projector",))
    codec, board = Codec(), "poison-board"
    mark = Watermark(source_partition=0, source_offset=3, accepted_at_ms=1_700_000_000_000)
    offsets = await _send_totals(region, [
        (totals_key(board, "ann"), codec.encode(_total(board, "ann", 5))),
        (totals_key(board, "sid"), codec.encode(_total(board, "sid", 9, sort_order="SIDEWAYS"))),
        (totals_key(board, "bad"), b"\xc1 not a record"),
        (totals_key(board, "cat"), codec.encode(_total(board, "cat", 7))),
        (WATERMARK_KEY, codec.encode(mark)),
    ])  # fmt: skip

    await region.wait_for_total(board, "cat", 7)
    assert await region.total_of(board, "ann") == 5 and await region.total_of(board, "sid") is None

    async def both_reconciled() -> bool:
        return len(await region.reconciliation()) == 2

    await region.wait_until(both_reconciled, what="two records in reconciliation")
    reconciled = sorted(await region.reconciliation(), key=lambda r: r.source_offset)
    topic = region.settings.kafka.topic("totals")
    assert [(r.reason, r.source_partition, r.source_offset, r.award) for r in reconciled] == [
        ("unprojectable_total", 0, offsets[1], None),
        ("unprojectable_total", 0, offsets[2], None),
    ]
    assert (
        reconciled[0].detail
        == f"invalid at {topic}:0:{offsets[1]}: Invalid enum value 'SIDEWAYS' - at `$.sort_order`"
    )
    assert reconciled[1].detail.startswith(f"undecodable at {topic}:0:{offsets[2]}")
    assert await _metric(region, 'lb_projector_unprojectable_total{reason="invalid"}') == 1.0

    await region.stop("projector")  # committed past them: a restart does not meet them again
    await region.start("projector")
    await _send_totals(region, [(totals_key(board, "dan"), codec.encode(_total(board, "dan", 1)))])
    await region.wait_for_total(board, "dan", 1)
    assert len(await region.reconciliation()) == 2


async def _rebuilt(region: Region) -> bool:
    positions = await region.projection.positions()
    return positions.epoch is not None and not positions.rebuilding


async def test_metrics_show_freshness_and_applied_totals(region: Region) -> None:
    board = "metrics-board"
    codec = Codec()
    await region.wait_until(lambda: _rebuilt(region), what="the first start's (empty) rebuild done")
    mark = Watermark(source_partition=0, source_offset=0, accepted_at_ms=1)
    await _send_totals(region, [
        (totals_key(board, "eve"), codec.encode(_total(board, "eve", 3))),
        (WATERMARK_KEY, codec.encode(mark)),
    ])  # fmt: skip
    await region.wait_for_total(board, "eve", 3)

    async def observed() -> bool:
        here = region.settings.region
        return (await _metric(region, f'lb_projector_freshness_seconds_count{{region="{here}"}}') or 0) >= 1

    await region.wait_until(observed, what="a freshness observation")
    assert (await _metric(region, "lb_projector_totals_applied_total") or 0) >= 1
    assert await _metric(region, "lb_projector_lease_held") == 1.0
    assert await _metric(region, "lb_projector_oldest_unprojected_seconds") is not None
    here = region.settings.region
    assert (
        await _metric(region, f'lb_projector_freshness_seconds_bucket{{le="+Inf",region="{here}"}}') or 0
    ) >= 1


async def test_a_projector_waits_while_another_writer_holds_the_projection(
    region_factory: RegionFactory,
) -> None:
    region = await region_factory(services=("intake",))
    codec, board = Codec(), "lease-board"
    await _send_totals(region, [(totals_key(board, "ann"), codec.encode(_total(board, "ann", 5)))])
    control = ProjectionControl(region.projection.redis, region.settings.redis.key_prefix)
    assert await control.hold_lease("ops/lb rebuild in this test", 30)  # as the command does

    starting = asyncio.create_task(region.start("projector"))

    async def waiting() -> bool:
        return "waiting for ops/lb rebuild in this test to release the projection" in region.tail("projector")

    await region.wait_until(waiting, what="the projector waiting for the lease")
    assert not starting.done() and await region.total_of(board, "ann") is None
    await control.release_lease("ops/lb rebuild in this test")
    await starting  # ready once it holds the lease
    await region.wait_for_total(board, "ann", 5)
    holder = await control.lease_holder()
    assert holder is not None and holder.endswith(f"pid {region.processes['projector'].pid}")
