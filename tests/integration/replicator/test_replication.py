"""The replicator between two real Kafka clusters: copies, provenance, no second hop, checkpoints."""

from __future__ import annotations

from regions.runtime.settings import Settings
from replicator.core import header
from schema.replication import HOP_HEADER, ORIGIN_HEADER, SOURCE_OFFSET_HEADER, SOURCE_PARTITION_HEADER
from tests.clusters import (
    RegionServers,
    Replicators,
    assert_each_copied_once,
    bootstrap_topics,
    read_all,
    read_copies,
    send_awards,
    source_position,
    two_regions,
    wait_caught_up,
)
from tests.harness import Region


async def wait_copied(local: Settings, source: str, count: int, within: float = 60) -> None:
    async def enough() -> bool:
        return len(await read_copies(local, source)) >= count

    await Region.wait_until(
        enough, within=within, what=f"{count} copies of {source}'s awards in {local.region}"
    )


async def test_awards_and_control_records_are_copied_to_the_same_partition_with_their_provenance(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    eu, us = eu_us
    sent = await send_awards(us, 40)
    sent += await send_awards(us, 6, partition=2, key=b"\x00hb")  # a heartbeat-like control record
    await replicators(eu, "us")

    await wait_copied(eu, "us", len(sent))
    copies = await read_copies(eu, "us")
    assert_each_copied_once(sent, copies)
    source = await read_all(us.kafka, us.kafka.topic("awards"), us.kafka.partitions)
    by_position = {(r.partition, r.offset): r for r in source}
    for copy in copies:
        original = by_position[source_position(copy)]
        assert (copy.key, copy.value, copy.timestamp) == (original.key, original.value, original.timestamp)
        headers = tuple(copy.headers)
        assert header(headers, ORIGIN_HEADER) == b"us" and header(headers, HOP_HEADER) == b"1"
        assert header(headers, SOURCE_PARTITION_HEADER) == str(original.partition).encode()
        assert header(headers, SOURCE_OFFSET_HEADER) == str(original.offset).encode()


async def test_records_that_are_copies_themselves_are_never_copied_again(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    """Copies that reach an awards topic (a misrouted write, a replicator pointed at the wrong topic)
    are checkpointed but not forwarded: no second hop, no loop between regions."""
    eu, us = eu_us
    own = await send_awards(us, 5, partition=0)
    await send_awards(us, 4, partition=0, headers=((ORIGIN_HEADER, b"eu"), (HOP_HEADER, b"1")))
    await send_awards(us, 3, partition=0, headers=((HOP_HEADER, b"1"),))
    own += await send_awards(us, 2, partition=0, headers=((ORIGIN_HEADER, b"us"), (HOP_HEADER, b"0")))
    replicator = await replicators(eu, "us")

    await wait_caught_up(replicator, us)
    assert_each_copied_once(own, await read_copies(eu, "us"))
    assert await replicator.metric("lb_replicator_records_skipped_total", 0) == 7


async def test_a_restart_resumes_from_the_checkpoint_with_nothing_lost_or_doubled(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    eu, us = eu_us
    sent = await send_awards(us, 30)
    first = await replicators(eu, "us")
    await wait_copied(eu, "us", 30)
    await first.stop()

    sent += await send_awards(us, 30)
    second = await replicators(eu, "us", name="-again")
    await wait_caught_up(second, us)
    assert_each_copied_once(sent, await read_copies(eu, "us"))
    assert sum([await second.metric("lb_replicator_records_copied_total", p) for p in range(6)]) == 30


async def test_partition_counts_that_differ_between_regions_stop_the_replicator(
    settings: Settings, second_kafka: RegionServers, replicators: Replicators
) -> None:
    eu, us = two_regions(settings, second_kafka.bootstrap_servers)
    us = us.model_copy(update={"kafka": us.kafka.model_copy(update={"partitions": 3})})
    await bootstrap_topics(eu, us)
    replicator = await replicators(eu, "us", wait_ready=False)

    assert await replicator.exited() == 3
    assert (
        "has 3 partitions" in replicator.tail() and "every region needs the same count" in replicator.tail()
    )


async def test_ready_while_the_source_region_is_unreachable(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    """Readiness is about the local cluster: a cut-off source region is reported, not fatal."""
    eu, _ = eu_us
    closed = eu.regions["us"].model_copy(update={"kafka_bootstrap_servers": "127.0.0.1:1"})
    cut_off = eu.model_copy(update={"regions": {**eu.regions, "us": closed}})
    replicator = await replicators(cut_off, "us")  # waits for /readyz

    async def reported() -> bool:
        return 'lb_replicator_source_reachable{source="us"}' in await replicator.metrics()

    await Region.wait_until(reported, what="the source reported unreachable")
    assert await replicator.metric("lb_replicator_source_reachable") == 0
