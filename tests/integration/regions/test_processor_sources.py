"""The processor of region eu folds its local awards and us's replicated ones as one task per partition.

Records are written into the test's ``awards.from-us`` topic with the headers the replicator writes,
as the replicator would. In-process and deterministic: the test hands the records of each round to
the processor itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from prometheus_client import REGISTRY

from regions.processor.loop import Processor
from regions.runtime.health import Health
from regions.runtime.settings import RegionEndpoint, Settings
from regions.stores.kafka.clients import FetchPace, make_consumer, make_producer, replay
from regions.stores.kafka.topics import ensure_topics
from regions.stores.rocksdb import RocksStore, store_options
from regions.stores.task_state import StoreBatch, StoreIdentity
from schema.event_id import event_id, payload_digest
from schema.records import (
    CONTROL_PREFIX,
    HEARTBEAT_KEY,
    AwardEvent,
    Codec,
    Heartbeat,
    PlayerTotal,
    Watermark,
    totals_key,
)
from schema.replication import (
    GAP_KEY,
    HOP_HEADER,
    ORIGIN_HEADER,
    SOURCE_OFFSET_HEADER,
    SOURCE_PARTITION_HEADER,
    ReplicationCodec,
    ReplicationGap,
    replicated_awards_topic,
)
from tests.clusters import delete_before

CODEC = Codec()


def _award(match: str, amount: int, region: str, at_ms: int = 1_000, user: str = "ann") -> AwardEvent:
    return AwardEvent(
        event_id=event_id("board", match, user, "kill"), digest=payload_digest(amount, None),
        board_id="board", match_id=match, user_id=user, award_type="kill", amount=amount,
        occurred_at_ms=None, region=region, accepted_at_ms=at_ms, aggregation="SUM", sort_order="DESC",
        tie_policy="FIRST_REACHED",
    )  # fmt: skip


@dataclass
class Sources:
    settings: Settings
    local: TopicPartition
    remote: TopicPartition

    def instance(self, name: str) -> Processor:
        """A processor instance of region eu with a state directory of its own, as on its own host."""
        cfg = self.settings.processor.model_copy(
            update={"store_dir": f"{self.settings.processor.store_dir}/{name}"}
        )
        return Processor(self.settings.model_copy(update={"processor": cfg}), Health("processor"))

    async def write(
        self, tp: TopicPartition, key: bytes, value: bytes, source_offset: int | None = None
    ) -> None:
        headers = []
        if source_offset is not None:  # what the replicator writes with every copied record
            headers = [(ORIGIN_HEADER, b"us"), (SOURCE_PARTITION_HEADER, str(tp.partition).encode()),
                       (SOURCE_OFFSET_HEADER, str(source_offset).encode()), (HOP_HEADER, b"1")]  # fmt: skip
        producer = make_producer(self.settings.kafka)
        await producer.start()
        try:
            await producer.send_and_wait(tp.topic, value, key=key, partition=tp.partition, headers=headers)
        finally:
            await producer.stop()

    async def award(self, award: AwardEvent, source_offset: int | None = None) -> None:
        tp = self.local if source_offset is None else self.remote
        await self.write(tp, totals_key(award.board_id, award.user_id), CODEC.encode(award), source_offset)

    async def read(self, topic: str) -> list[ConsumerRecord]:
        found: list[ConsumerRecord] = []

        async def keep(records: list[ConsumerRecord]) -> None:
            found.extend(records)

        await replay(self.settings.kafka, [TopicPartition(self.settings.kafka.topic(topic), 0)], keep)
        return found

    async def totals(self) -> list[tuple[str, int, int]]:
        records = await self.read("totals")
        values = [CODEC.totals(r.value) for r in records if not r.key.startswith(CONTROL_PREFIX)]
        return [(t.user_id, t.total, t.version) for t in values if isinstance(t, PlayerTotal)]

    async def watermarks(self) -> list[Watermark]:
        records = await self.read("totals")
        values = [CODEC.totals(r.value) for r in records if r.key.startswith(CONTROL_PREFIX)]
        return [w for w in values if isinstance(w, Watermark)]

    async def reconciled(self) -> list[tuple[str, str]]:
        values = [CODEC.reconciliation(r.value) for r in await self.read("reconciliation")]
        return [(r.reason, r.source_region) for r in values]


@pytest.fixture
async def sources(settings: Settings, kafka_ready: None) -> Sources:
    endpoint = RegionEndpoint(kafka_bootstrap_servers=settings.kafka.bootstrap_servers)
    eu = settings.model_copy(update={"region": "eu", "regions": {"eu": endpoint, "us": endpoint}})
    await ensure_topics(eu.kafka, ["us"])
    return Sources(
        eu,
        TopicPartition(eu.kafka.topic("awards"), 0),
        TopicPartition(eu.kafka.topic(replicated_awards_topic("us")), 0),
    )


@pytest.fixture
async def consumer(sources: Sources) -> AsyncIterator[AIOKafkaConsumer]:
    group = f"{sources.settings.kafka.topic_prefix}.processor.eu"
    consumer = make_consumer(sources.settings.kafka, group_id=group)
    await consumer.start()
    consumer.assign([sources.local, sources.remote])
    try:
        yield consumer
    finally:
        await consumer.stop()


async def _round(processor: Processor, consumer: AIOKafkaConsumer, local: int, remote: int) -> None:
    """Read exactly ``local`` and ``remote`` new records of partition 0 and process them as one round."""
    task = processor.owned[0]
    wanted = dict(zip(task.next_offsets, (local, remote), strict=True))
    got: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in wanted}
    for tp, n in wanted.items():
        consumer.seek(tp, task.next_offsets[tp])
        while len(got[tp]) < n:
            got[tp] += (await consumer.getmany(tp, timeout_ms=1000)).get(tp, [])
        got[tp] = got[tp][:n]
    await processor.process_task(task, {tp: rs for tp, rs in got.items() if rs})


@asynccontextmanager
async def _owner(sources: Sources, consumer: AIOKafkaConsumer, host: str = "a") -> AsyncIterator[Processor]:
    """A processor instance on ``host`` owning partition 0 of both sources, released afterwards."""
    processor = sources.instance(host)
    await processor.prepare()
    await processor.take(consumer, [sources.local, sources.remote])
    await processor.settle(consumer)
    try:
        yield processor
    finally:
        await processor.close()


async def test_the_same_award_in_both_sources_counts_once(
    sources: Sources, consumer: AIOKafkaConsumer
) -> None:
    async with _owner(sources, consumer) as processor:
        here = _award("m1", 5, "eu", at_ms=1_000)
        await sources.award(here)
        await sources.award(_award("m2", 7, "us", at_ms=2_000), source_offset=41)
        retried = msgspec.structs.replace(here, region="us", accepted_at_ms=1_500)  # the client retried in us
        await sources.award(retried, source_offset=42)
        await _round(processor, consumer, local=1, remote=2)

        assert await sources.totals() == [("ann", 5, 1), ("ann", 12, 2)]
        marks = {
            w.region: (w.source_partition, w.source_offset, w.accepted_at_ms)
            for w in await sources.watermarks()
        }
        assert marks == {"eu": (0, 0, 1_000), "us": (0, 42, 2_000)}
        assert await sources.reconciled() == []


async def test_a_conflicting_copy_goes_to_reconciliation(
    sources: Sources, consumer: AIOKafkaConsumer
) -> None:
    async with _owner(sources, consumer) as processor:
        await sources.award(_award("m1", 5, "eu"))
        await sources.award(_award("m1", 6, "us"), source_offset=3)  # same event id, another payload
        await _round(processor, consumer, local=1, remote=1)

        assert await sources.totals() == [("ann", 5, 1)]
        assert await sources.reconciled() == [("conflicting_repeat", "us")]


async def test_heartbeats_and_gaps_advance_watermarks_without_changing_totals(
    sources: Sources, consumer: AIOKafkaConsumer
) -> None:
    async with _owner(sources, consumer) as processor:
        await sources.write(sources.local, HEARTBEAT_KEY, CODEC.encode(Heartbeat(region="eu", at_ms=5_000)))
        await sources.write(
            sources.remote, HEARTBEAT_KEY, CODEC.encode(Heartbeat(region="us", at_ms=6_000)), 50
        )
        gap = ReplicationGap(
            source_region="us", source_partition=0, first_missing=51, first_available=60, detected_at_ms=7_000
        )
        await sources.write(sources.remote, GAP_KEY, ReplicationCodec().encode(gap), 59)
        await sources.write(sources.remote, b"\x00someday|board", b"anything", 60)  # unknown control: ignored
        await _round(processor, consumer, local=1, remote=3)

        assert await sources.totals() == []
        marks = {w.region: (w.source_offset, w.heartbeat_at_ms, w.gaps) for w in await sources.watermarks()}
        assert marks == {"eu": (0, 5_000, 0), "us": (60, 6_000, 1)}
        assert await sources.reconciled() == []


def _deleted_unread(region: str) -> float:
    return REGISTRY.get_sample_value("lb_processor_deleted_records_total", {"source_region": region}) or 0.0


async def test_awards_deleted_before_a_takeover_read_them_are_counted_and_shown_as_a_gap(
    sources: Sources, consumer: AIOKafkaConsumer
) -> None:
    """The processor was down longer than the awards topic keeps records: awards acknowledged and
    never applied. The new owner says how many, goes on from the oldest left, and its region's
    position carries a gap (what every asOf of it shows), never passing them in silence."""
    for i in range(5):
        await sources.award(_award(f"m{i}", 1, "eu"))
    await delete_before(sources.settings, 0, 3)
    before = _deleted_unread("eu")
    async with _owner(sources, consumer) as processor:
        assert processor.owned[0].next_offsets[sources.local] == 3
        assert _deleted_unread("eu") - before == 3
        await _round(processor, consumer, local=2, remote=0)

        assert await sources.totals() == [("ann", 1, 1), ("ann", 2, 2)]
        marks = {w.region: (w.source_offset, w.gaps) for w in await sources.watermarks()}
        assert marks == {"eu": (4, 1)}
        assert processor.owned[0].deleted == {}


async def test_a_takeover_revoked_before_its_adoption_gives_back_its_store_and_reports_once(
    sources: Sources, consumer: AIOKafkaConsumer
) -> None:
    """The group rebalanced again while a takeover finished, and the task went elsewhere before it was
    adopted: its store and producer are given back, so the next takeover on this host opens the same
    store (a tail restore, not a full one into another slot), and what retention deleted is reported
    once, by the takeover that is adopted."""
    for i in range(5):
        await sources.award(_award(f"m{i}", 1, "eu"))
    await delete_before(sources.settings, 0, 3)
    before = _deleted_unread("eu")
    processor = sources.instance("a")
    await processor.prepare()
    try:
        await processor.take(consumer, [sources.local, sources.remote])
        await processor.pause()  # the next rebalance began before the takeover was adopted
        await processor.settle(consumer)  # the takeover finishes and waits for the assignment
        assert processor.owned == {}
        await processor.take(consumer, [])  # the task went to another instance
        assert _deleted_unread("eu") == before

        await processor.take(consumer, [sources.local, sources.remote])  # and came back
        await processor.settle(consumer)
        assert processor.owned[0].restored.mode == "tail"
        assert _deleted_unread("eu") - before == 3
    finally:
        await processor.close()


async def test_awards_deleted_while_the_owner_was_behind_are_counted_and_shown_as_a_gap(
    sources: Sources, consumer: AIOKafkaConsumer
) -> None:
    """Retention deletes awards the owning processor has not read yet: its consumer moves on to the
    oldest record left by itself, and the processor finds out from the jump in offsets."""
    async with _owner(sources, consumer) as processor:
        for i in range(10):
            await sources.award(_award(f"m{i}", 1, "eu"))
        await delete_before(sources.settings, 0, 7)
        before = _deleted_unread("eu")
        consumer.seek(sources.local, 0)  # where the task stands: the fetch finds offset 0 gone
        pace = FetchPace(consumer, sources.settings.kafka)
        while not await processor._round(consumer, pace):
            pass

        assert _deleted_unread("eu") - before == 7
        assert [total for _, total, _ in await sources.totals()] == [1, 2, 3]
        marks = {w.region: (w.source_offset, w.gaps) for w in await sources.watermarks()}
        assert marks == {"eu": (9, 1)}


async def test_poison_records_are_reconciled_and_the_partition_goes_on(
    sources: Sources, consumer: AIOKafkaConsumer
) -> None:
    async with _owner(sources, consumer) as processor:
        await sources.write(sources.remote, b"board|ann", b"\xc1 not msgpack", 8)
        await sources.award(_award("m1", 5, "us"), source_offset=None)  # local copy, fine
        await sources.write(sources.remote, b"board|ann", CODEC.encode(_award("m2", 1, "us")))  # no header
        await sources.write(sources.remote, HEARTBEAT_KEY, b"\xc1", 9)  # undecodable control record
        await sources.award(_award("m3", 2, "us"), source_offset=10)
        await _round(processor, consumer, local=1, remote=4)

        assert await sources.totals() == [("ann", 5, 1), ("ann", 7, 2)]
        assert sorted(await sources.reconciled()) == [
            ("missing_source_offset", "us"), ("undecodable", "us"), ("undecodable_control", "us"),
        ]  # fmt: skip


async def test_a_warm_restart_restores_only_the_tail(sources: Sources, consumer: AIOKafkaConsumer) -> None:
    async with _owner(sources, consumer) as first:
        for i in range(20):
            await sources.award(_award(f"m{i}", 1, "eu", user=f"u{i}"))
        await _round(first, consumer, local=20, remote=0)

    async with _owner(sources, consumer) as again:  # same host, same store
        restored = again.owned[0].restored
        assert (restored.mode, restored.records) == ("tail", 0)
        assert (player := again.owned[0].store.player(("board", "u7"))) is not None and player.total == 1

    async with _owner(sources, consumer, host="b") as other:  # another host takes over, cold
        assert (other.owned[0].restored.mode, other.owned[0].restored.records) == ("full", 20 + 20 + 1)
        await sources.award(_award("m0", 1, "eu", user="u0", at_ms=10**9))  # beyond the horizon: counts
        await _round(other, consumer, local=1, remote=0)

    async with _owner(sources, consumer) as back:  # back on the first host
        restored = back.owned[0].restored
        assert (restored.mode, restored.records) == ("tail", 3)  # one total, one dedupe record, one watermark
        assert (player := back.owned[0].store.player(("board", "u0"))) is not None and player.total == 2


@pytest.mark.parametrize("damage", ["beyond_end", "foreign"])
async def test_a_stale_or_foreign_store_is_wiped_and_fully_restored(
    sources: Sources, consumer: AIOKafkaConsumer, damage: str
) -> None:
    async with _owner(sources, consumer) as first:
        await sources.award(_award("m1", 5, "eu"))
        await _round(first, consumer, local=1, remote=0)
        identity = first.identity(0)

    path = (
        Path(sources.settings.processor.store_dir) / "a" / sources.settings.kafka.topic_prefix / "eu" / "p0"
    )
    store = RocksStore(path, store_options(cache_mib=8, write_buffer_mib=4))
    if damage == "beyond_end":  # as after the changelog was deleted and made again
        store.write(StoreBatch(changelog={identity.changelogs[0]: 10_000}))
    else:
        store.reset(StoreIdentity("another-cluster", identity.changelogs, 0))
    store.close()

    async with _owner(sources, consumer) as again:
        restored = again.owned[0].restored
        assert restored.mode == "full" and restored.records == 3
        assert ("beyond its end" if damage == "beyond_end" else "another-cluster") in restored.reason
        assert (player := again.owned[0].store.player(("board", "ann"))) is not None and player.total == 5
