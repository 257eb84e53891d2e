"""Faults of the replicator between two real Kafka clusters. Afterwards every source record is in
the local topic exactly once (read committed), or inside a reported gap: never lost silently."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

from aiokafka import ConsumerRecord

from regions.runtime.settings import Settings
from schema.replication import (
    CHECKPOINTS_TOPIC,
    GAP_KEY,
    ReplicationCodec,
    ReplicationGap,
    replicated_awards_topic,
)
from tests.clusters import (
    Replicators,
    Sent,
    assert_each_copied_once,
    delete_before,
    read_all,
    read_copies,
    send_awards,
    source_position,
    wait_caught_up,
    wait_until,
)


def _gaps(copies: list[ConsumerRecord]) -> list[tuple[int, ReplicationGap]]:
    return [(c.partition, ReplicationCodec().gap(c.value)) for c in copies if c.key == GAP_KEY]


async def test_a_replicator_killed_mid_batch_resumes_with_every_record_copied_once(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    eu, us = eu_us
    sent: list[Sent] = []

    async def load() -> None:
        for _ in range(30):
            sent.extend(await send_awards(us, 100, size=200))
            await asyncio.sleep(0.1)  # a steady stream of about 1,000 records/s, not a timing assumption

    first = await replicators(eu, "us")
    loading = asyncio.create_task(load())

    async def copying() -> bool:
        return len(await read_copies(eu, "us")) >= 300

    await wait_until(copying, 60, "the first 300 copies")
    assert not loading.done(), "the load ended before the kill; the kill would not be mid-stream"
    await first.kill()  # SIGKILL while records keep coming: likely inside a transaction
    restarted = await replicators(eu, "us", name="-restarted")
    await loading
    await wait_caught_up(restarted, us)

    assert len(sent) == 3000
    assert_each_copied_once(sent, await read_copies(eu, "us"))


async def test_a_second_instance_of_the_pair_fences_the_first_which_exits_saying_so(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    eu, us = eu_us
    first = await replicators(eu, "us")
    second = await replicators(eu, "us", name="-second")
    sent = await send_awards(us, 50)

    assert await first.exited() == 3  # at its next transaction
    assert "was fenced: another instance with transactional id" in first.tail()
    await wait_caught_up(second, us)
    assert_each_copied_once(sent, await read_copies(eu, "us"))
    assert second.process is not None and second.process.returncode is None


async def test_records_deleted_before_the_first_copy_are_reported_as_a_gap(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    eu, us = eu_us
    sent = await send_awards(us, 20, partition=0)
    await delete_before(us, 0, 12)
    replicator = await replicators(eu, "us")
    await wait_caught_up(replicator, us)

    copies = await read_copies(eu, "us")
    [(partition, gap)] = _gaps(copies)
    assert (partition, gap.source_region, gap.source_partition) == (0, "us", 0)
    assert (gap.first_missing, gap.first_available) == (0, 12)
    assert_each_copied_once(sent[12:], copies)
    assert await replicator.metric("lb_replicator_gaps_total", 0) == 1
    assert await replicator.metric("lb_replicator_missing_records_total", 0) == 12


async def test_records_deleted_while_the_replicator_is_behind_are_reported_as_a_gap(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    """The replicator is frozen with one fetch outstanding; the source receives more than one fetch
    returns (1 MB) and deletes most of it. Thawed, the replicator copies what it had fetched, finds
    its next position gone, reports exactly the missing offsets as a gap and copies the rest."""
    eu, us = eu_us
    sent = await send_awards(us, 10, partition=1)
    replicator = await replicators(eu, "us")
    await wait_caught_up(replicator, us)

    replicator.signal(signal.SIGSTOP)
    try:
        sent += await send_awards(us, 300, partition=1, size=10_000)
        await delete_before(us, 1, 250)
    finally:
        replicator.signal(signal.SIGCONT)
    await wait_caught_up(replicator, us)

    copies = await read_copies(eu, "us")
    [(partition, gap)] = _gaps(copies)
    assert partition == 1 and gap.first_available == 250 and 10 <= gap.first_missing < 250
    assert_each_copied_once([s for s in sent if not gap.first_missing <= s.offset < 250], copies)
    assert await replicator.metric("lb_replicator_gaps_total", 1) == 1
    assert await replicator.metric("lb_replicator_missing_records_total", 1) == 250 - gap.first_missing


async def _sizes(eu: Settings, us: Settings) -> dict[str, int]:
    """Committed records of every topic the replicators read or write, in both regions."""
    found = {}
    for local, source in ((eu, "us"), (us, "eu")):
        k = local.kafka
        for topic in (
            k.topic("awards"),
            k.topic(replicated_awards_topic(source)),
            k.topic(CHECKPOINTS_TOPIC),
        ):
            found[f"{local.region}: {topic}"] = len(await read_all(k, topic, k.partitions))
    return found


async def test_replicators_in_both_directions_copy_each_record_once_and_then_stay_quiet(
    eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    """Once quiet, the six topics (each region's awards, copies and checkpoints) hold exactly what
    was sent, each record copied once; two rounds of one more award each way then grow every one
    of them by exactly one record (the award, its copy, the copy's checkpoint): nothing is copied
    back, copied again or checkpointed again while the replicators go round."""
    eu, us = eu_us
    into_eu, into_us = await replicators(eu, "us"), await replicators(us, "eu")
    from_eu, from_us = await asyncio.gather(send_awards(eu, 200), send_awards(us, 200))
    await wait_caught_up(into_eu, us)
    await wait_caught_up(into_us, eu)

    async def copied_once() -> None:
        for local, source, sent in ((eu, "us", from_us), (us, "eu", from_eu)):
            copies = await read_copies(local, source)
            assert_each_copied_once(sent, copies)
            assert all(source_position(c)[0] == c.partition for c in copies)

    await wait_until(lambda: _holds(copied_once), 30, "each record copied once")
    sizes = await _sizes(eu, us)
    awards = {f"eu: {eu.kafka.topic('awards')}": 200, f"us: {us.kafka.topic('awards')}": 200}
    assert {name: sizes[name] for name in awards} == awards  # the awards topics hold only their own

    for _ in range(2):
        # One more record each way, once copied, shows each replicator went round again.
        from_eu += await send_awards(eu, 1)
        from_us += await send_awards(us, 1)
        await wait_caught_up(into_eu, us)
        await wait_caught_up(into_us, eu)
        expected = {name: count + 1 for name, count in sizes.items()}
        # A read sees a transaction's records once its commit markers land, shortly after the commit.
        await wait_until(lambda e=expected: _reached(eu, us, e), 30, f"the topics growing to {expected}")
        sizes = await _sizes(eu, us)
        assert sizes == expected
        await copied_once()


async def _reached(eu: Settings, us: Settings, expected: dict[str, int]) -> bool:
    found = await _sizes(eu, us)
    return all(found[name] >= count for name, count in expected.items())


async def _holds(check: Callable[[], Awaitable[None]]) -> bool:
    try:
        await check()
    except AssertionError:
        return False
    return True
