"""Kafka adapter: producers and consumers, configured from settings (the topics: ``topics``).

Every producer is idempotent with acks=all; every consumer reads committed data only and never
auto-commits (offsets are committed inside the processor's transaction or explicitly).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.errors import (
    InvalidProducerEpoch,
    KafkaError,
    OutOfOrderSequenceNumber,
    ProducerFenced,
    UnknownProducerId,
)
from aiokafka.partitioner import DefaultPartitioner

from regions.runtime.metrics import INTAKE_PRODUCER_RENEWALS
from regions.runtime.settings import KafkaSettings
from regions.stores.kafka.partitioner import KeyPartitioner
from regions.stores.kafka.security import connection_options
from schema.records import only_time

log = logging.getLogger(__name__)

SEQUENCE_LOST = (OutOfOrderSequenceNumber, UnknownProducerId, InvalidProducerEpoch, ProducerFenced)
"""Refusals after which an idempotent producer's sequence numbers no longer match the broker's (the
broker lost or dropped its state for the producer, as over a broker restart that truncated its log):
aiokafka keeps sending with them, so every later record of that producer is refused the same way."""


def make_producer(
    kafka: KafkaSettings, *, transactional_id: str | None = None, batch_bytes: int = 16_384
) -> AIOKafkaProducer:
    """An idempotent acks=all producer; transactional when given a transactional id. A partition's
    records wait for its previous batch to be sent: ``batch_bytes`` bounds each batch. Records of
    single sends wait ``kafka.linger_ms`` for others to share their request; a transactional producer
    sends whole batches, which have nothing to wait for."""
    return AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers,
        **connection_options(kafka),
        acks="all",
        enable_idempotence=True,
        linger_ms=0 if transactional_id is not None else kafka.linger_ms,
        request_timeout_ms=kafka.request_timeout_ms,
        transactional_id=transactional_id,
        transaction_timeout_ms=kafka.transaction_timeout_ms,
        max_batch_size=batch_bytes,
        partitioner=KeyPartitioner(),
    )


def make_consumer(
    kafka: KafkaSettings,
    *topics: str,
    group_id: str | None,
    from_beginning: bool = True,
    session_timeout_ms: int = 10_000,
    co_partitioned: bool = False,
    fetch_wait_ms: int | None = None,
    skip_deleted: bool = True,
) -> AIOKafkaConsumer:
    """A read_committed consumer that never auto-commits. ``co_partitioned``: the group gives the same
    partition number of every subscribed topic to one member (range assignment; the topics must
    have equal partition counts), so one member owns partition p of every source. ``fetch_wait_ms``: it
    follows a stream as it grows, and its fetches wait at the broker that long for a full response
    (``live_fetch``); otherwise (a restore, a replay to the end) every fetch is answered at once.
    ``skip_deleted=False``: a position whose records were deleted (retention) is not moved on
    silently; ``getmany`` raises ``OffsetOutOfRangeError`` naming it, for the caller to report."""
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=kafka.bootstrap_servers,
        **connection_options(kafka),
        **(live_fetch(kafka, fetch_wait_ms) if fetch_wait_ms is not None else {}),
        group_id=group_id,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset=("earliest" if from_beginning else "latest") if skip_deleted else "none",
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=session_timeout_ms // 3,
        partition_assignment_strategy=assignment_strategy(co_partitioned),
    )


def live_fetch(kafka: KafkaSettings, wait_ms: int) -> dict[str, int]:
    """Fetch options of a consumer that follows a stream: each fetch waits at the broker for
    ``fetch_min_bytes`` or ``wait_ms``, whichever comes first, so a steady flow of small record batches
    is read in a few large fetches instead of one fetch per batch. A consumer that takes records on
    a cadence waits as long as its interval: a shorter wait only costs requests."""
    return {"fetch_max_wait_ms": wait_ms, "fetch_min_bytes": kafka.fetch_min_bytes}


class FetchPace:
    """How long a started live consumer's fetches wait, by what its stream carries. While it carries
    work, each fetch waits as the consumer was made to (``live_fetch``: its busy wait for
    ``fetch_min_bytes``), so a flow is read in a few large fetches. Once its polls have brought nothing but records that only say time
    passed (heartbeats, watermarks) for ``quiet_after_s`` (default: one quiet wait), the next fetches
    are answered by the first record that lands (fetch.min.bytes 1) and otherwise wait
    ``kafka.quiet_fetch_wait_ms``: an idle stream costs the broker a fetch per heartbeat or per quiet
    wait instead of one per busy wait, and the first award after a quiet spell is read at once, not
    after a busy wait. A trickle of work stays busy: a quiet fetch would be answered by each record,
    a round and a transaction each.

    aiokafka builds every fetch request from its fetcher's ``_fetch_max_wait_ms`` and
    ``_fetch_min_bytes`` (the version is pinned in the lock files); ``FetchPace`` refuses to start
    if they are gone, rather than pace nothing."""

    def __init__(
        self,
        consumer: AIOKafkaConsumer,
        kafka: KafkaSettings,
        quiet_after_s: float | None = None,
    ) -> None:
        fetcher = getattr(consumer, "_fetcher", None)
        if fetcher is None or not {"_fetch_max_wait_ms", "_fetch_min_bytes"} <= vars(fetcher).keys():
            raise RuntimeError(
                "FetchPace needs a started aiokafka consumer whose fetcher keeps its fetch options; "
                "check the aiokafka version against the lock file"
            )
        self._fetcher = fetcher
        self._busy = (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes)
        self._quiet = (kafka.quiet_fetch_wait_ms, 1)
        self._quiet_after_s = kafka.quiet_fetch_wait_ms / 1000 if quiet_after_s is None else quiet_after_s
        self._worked_at = time.monotonic()
        self.quiet = False

    def after(self, polled: Mapping[TopicPartition, Sequence[ConsumerRecord]]) -> None:
        """Set the pace of the next fetches from what a poll brought."""
        now = time.monotonic()
        if not all(only_time(r.key) for records in polled.values() for r in records):
            self._worked_at = now
        quiet = now - self._worked_at >= self._quiet_after_s
        if quiet != self.quiet:
            self.quiet = quiet
            wait_ms, min_bytes = self._quiet if quiet else self._busy
            self._fetcher._fetch_max_wait_ms, self._fetcher._fetch_min_bytes = wait_ms, min_bytes


def assignment_strategy(co_partitioned: bool) -> tuple[type[AbstractPartitionAssignor], ...]:
    """Range assignment gives every member the same partition numbers of equally partitioned topics
    (each topic's sorted partitions split over the same sorted members); round robin spreads best."""
    return (RangePartitionAssignor,) if co_partitioned else (RoundRobinPartitionAssignor,)


class TopicMissing(KafkaError):  # type: ignore[misc]
    """A platform topic is not there (yet). A Kafka error like any other, so services retry: one
    started before 'ops/lb bootstrap', or before new topics reach the broker's metadata, waits for
    them instead of running with no partitions."""


class AcceptanceUnavailable(Exception):
    """Kafka did not acknowledge with the configured policy in time; the caller may retry."""


class RenewableProducer:
    """A long-lived idempotent producer (``make()``, started by ``start``), replaced by a new one (a new
    producer id, its sequences from zero) once the brokers refuse its sequence numbers (``SEQUENCE_LOST``).
    Without that, every later record would be refused until the process restarts. The records refused
    were not written and their senders were told so; a retry that writes an award twice is counted
    once by its event id. A replacement that fails (brokers still away) is tried again at the next refusal."""

    def __init__(self, make: Callable[[], AIOKafkaProducer]) -> None:
        self._make = make
        self._producer = make()
        self._renewing: asyncio.Task[None] | None = None
        self._retired: set[asyncio.Task[None]] = set()

    @property
    def current(self) -> AIOKafkaProducer:
        return self._producer

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        if self._renewing is not None:
            self._renewing.cancel()
            await asyncio.gather(self._renewing, return_exceptions=True)
        await self._producer.stop()
        await asyncio.gather(*self._retired, return_exceptions=True)

    @contextlib.contextmanager
    def sending(self) -> Iterator[AIOKafkaProducer]:
        """The producer to send with; a refusal of its sequence numbers raised inside replaces it soon."""
        producer = self._producer
        try:
            yield producer
        except SEQUENCE_LOST as exc:
            if producer is self._producer and (self._renewing is None or self._renewing.done()):
                self._renewing = asyncio.create_task(self._renew(producer, exc))
            raise

    async def _renew(self, failed: AIOKafkaProducer, reason: BaseException) -> None:
        fresh = self._make()
        try:
            await fresh.start()
        except (KafkaError, OSError) as exc:
            log.warning("the Kafka producer was refused (%r) and a new one could not start (%r); "
                        "trying again at the next refusal", reason, exc)  # fmt: skip
            await fresh.stop()
            return
        self._producer = fresh
        INTAKE_PRODUCER_RENEWALS.inc()
        log.warning("the brokers refused the Kafka producer's sequence numbers (%r): a new producer took over", reason)
        retiring = asyncio.create_task(failed.stop())
        self._retired.add(retiring)
        retiring.add_done_callback(self._retired.discard)


class AwardPublisher:
    """Sends awards with acks=all and returns their (partition, offset) once all are acknowledged."""

    def __init__(self, producer: RenewableProducer, topic: str, timeout_s: float) -> None:
        self._producer = producer
        self._topic = topic
        self._timeout_s = timeout_s

    async def publish(self, records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        """Publish (key, value) pairs; raises AcceptanceUnavailable unless every one is acknowledged."""
        try:
            async with asyncio.timeout(self._timeout_s):
                with self._producer.sending() as producer:
                    futures = [await producer.send(self._topic, value, key=key) for key, value in records]
                    metadata = await asyncio.gather(*futures)
        except (KafkaError, TimeoutError) as exc:
            raise AcceptanceUnavailable(f"Kafka did not acknowledge: {exc!r}") from exc
        return [(m.partition, m.offset) for m in metadata]


async def _behind(consumer: AIOKafkaConsumer, end: dict[TopicPartition, int]) -> int:
    """Records still to read before ``end`` (0 when every partition reached it)."""
    left = 0
    for tp, offset in end.items():
        left += max(0, offset - await consumer.position(tp))
    return left


async def replay(
    kafka: KafkaSettings,
    tps: list[TopicPartition],
    handle: Callable[[list[ConsumerRecord]], Awaitable[None]],
    *,
    start: dict[TopicPartition, int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[TopicPartition, int]:
    """Read committed records of ``tps`` from ``start`` (default: the beginning) to the end offsets
    taken when the call begins, handing each batch to ``handle``; returns those end offsets.
    ``progress(done, total)`` counts offsets read."""
    consumer = make_consumer(kafka, group_id=None)
    await consumer.start()
    try:
        consumer.assign(tps)
        for tp in tps:
            if start and tp in start:
                consumer.seek(tp, start[tp])
            else:
                await consumer.seek_to_beginning(tp)
        end: dict[TopicPartition, int] = await consumer.end_offsets(tps)
        total = left = await _behind(consumer, end)
        while left:
            batch = await consumer.getmany(*tps, timeout_ms=500, max_records=20_000)
            for tp, records in batch.items():
                records = [r for r in records if r.offset < end[tp]]
                if records:
                    await handle(records)
            left = await _behind(consumer, end)
            if progress is not None:
                progress(total - left, total)  # offsets, transaction markers included
        return end
    finally:
        await stop_consumer(consumer)


async def stop_consumer(consumer: AIOKafkaConsumer) -> None:
    """Stop ``consumer``, even right after a broker went away. aiokafka (0.14) stops its fetcher by
    cancelling every fetch in flight and awaiting each; a fetch that failed and is backing off
    (``retry_backoff_ms``) passes that cancellation on, so ``stop`` raises ``CancelledError`` before the
    other fetches are cancelled and the connections closed, and a service whose run ended on a Kafka
    error would exit instead of starting again. Such a stop is finished here; a cancellation of the
    task that is stopping the consumer still goes through."""
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        fetcher = consumer._fetcher  # what the interrupted stop left running: its fetches and the client
        fetches = [] if fetcher is None else [fetcher._fetch_task, *fetcher._pending_tasks]
        for fetch in fetches:
            fetch.cancel()
        await asyncio.gather(*fetches, return_exceptions=True)
        await consumer._client.close()


async def assign_from_committed(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> None:
    """Assign ``tps`` and continue from the group's committed offsets (the beginning if none)."""
    consumer.assign(tps)
    for tp in tps:
        committed = await consumer.committed(tp)
        if committed is None:
            await consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, committed)


async def committed_metadata(
    kafka: KafkaSettings, group: str, tps: list[TopicPartition]
) -> dict[TopicPartition, str]:
    """The metadata of the group's committed offsets of ``tps`` (those it committed)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers, **connection_options(kafka))
    await admin.start()
    try:
        found = await admin.list_consumer_group_offsets(group, partitions=tps)
    finally:
        await admin.close()
    return {tp: committed.metadata or "" for tp, committed in found.items() if committed.offset >= 0}


async def consumer_lag(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> dict[int, int]:
    """Records between the consumer's position and the end, per partition."""
    end = await consumer.end_offsets(tps)
    return {tp.partition: max(0, end[tp] - await consumer.position(tp)) for tp in tps}


async def cluster_id(kafka: KafkaSettings) -> str:
    """The Kafka cluster's id: a local copy of a changelog is only valid for the cluster it came from."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers, **connection_options(kafka))
    await admin.start()
    try:
        return str((await admin.describe_cluster())["cluster_id"])
    finally:
        await admin.close()


def partition_of_key(key: bytes, partitions: list[int]) -> int:
    """The partition a producer sends ``key`` to without an explicit partition (murmur2, as every
    Kafka client does): where the intake put the awards of that key."""
    return int(DefaultPartitioner()(key, partitions, partitions))


async def partitions_of(kafka: KafkaSettings, topic: str) -> list[int]:
    """The topic's partitions, from the brokers; ``TopicMissing`` when it does not exist."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers, **connection_options(kafka))
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    found = sorted(p["partition"] for t in described if t.get("error_code", 0) == 0 for p in t["partitions"])
    if not found:
        raise TopicMissing(f"topic {topic} does not exist (yet); run 'ops/lb bootstrap'")
    return found
