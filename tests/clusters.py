"""More regions for tests: Kafka clusters of their own, and replicator processes between them.

Each region's servers (a Kafka cluster and a Redis, ``ops.clusters``) are started by
``ops/services`` in a data folder of their own on free ports, so they never touch the shared
servers, and stopped by it at the end of the session. The broker has a second listener that
advertises a proxy's port (``RegionServers.proxy``): a client bootstrapped from the proxy reaches
the broker only through it, so a test can cut that client off at the network level. In ``eu_us``
the shared Kafka plays region ``eu``, the cluster of region ``us`` region ``us``.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from ops import clusters
from ops.clusters import ReplicatorProcess, bootstrap_topics, end_offsets, two_regions
from regions.runtime.settings import KafkaSettings, Settings
from regions.stores.kafka.clients import make_producer, replay
from schema.replication import (
    GAP_KEY,
    SOURCE_OFFSET_HEADER,
    SOURCE_PARTITION_HEADER,
    replicated_awards_topic,
)
from tests.harness import Region, delete_topics, free_port
from tests.proxy import TcpProxy

wait_until = Region.wait_until


class RegionServers(clusters.RegionServers):
    """A region's servers (``ops.clusters``), with proxies in front of them for cutting them off."""

    async def proxy(self) -> TcpProxy:
        """A proxy in front of the second listener, on the port that listener advertises; close it
        at the end of the test (the next test starts its own)."""
        proxy = TcpProxy("127.0.0.1", self.proxied_port)
        await proxy.start(self.proxy_port)
        return proxy

    async def redis_proxy(self) -> TcpProxy:
        """A proxy in front of the Redis, on a free port (its ``port``); close it at the end of the test."""
        if self.redis_port is None:
            raise RuntimeError(f"the servers under {self.data_dir} have no Redis")
        proxy = TcpProxy("127.0.0.1", self.redis_port)
        await proxy.start()
        return proxy


class RegionServerPool:
    """This session's other regions' servers by name (a Kafka cluster and a Redis each), each
    started on first use and stopped at the end."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._servers: dict[str, RegionServers] = {}

    async def get(self, *names: str) -> list[RegionServers]:
        """The servers of ``names``, starting those not running yet side by side."""
        missing = [n for n in dict.fromkeys(names) if n not in self._servers]
        for name in missing:  # known before they start, so a failed start is still stopped
            self._servers[name] = RegionServers(self._root / name, redis_port=free_port())
        await asyncio.gather(*(asyncio.to_thread(self._servers[n].start) for n in missing))
        return [self._servers[n] for n in names]

    def stop(self) -> None:
        for servers in self._servers.values():
            servers.stop()
        shutil.rmtree(self._root, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class Sent:
    """A record written to a region's awards topic, where it landed."""

    partition: int
    offset: int
    key: bytes
    value: bytes
    timestamp_ms: int


async def send_awards(
    settings: Settings,
    count: int,
    *,
    partition: int | None = None,
    headers: tuple[tuple[str, bytes], ...] = (),
    size: int = 32,
    key: bytes | None = None,
) -> list[Sent]:
    """``count`` records with unique values to the region's awards topic, spread over its partitions
    unless ``partition`` is given; the value is padded to ``size`` bytes."""
    tag = uuid.uuid4().hex[:8]
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        pending = []
        for i in range(count):
            k, v = key or f"board|user-{tag}-{i}".encode(), f"{tag}-{i}".encode().ljust(size, b".")
            target = i % settings.kafka.partitions if partition is None else partition
            future = await producer.send(settings.kafka.topic("awards"), v, key=k, partition=target,
                                         headers=list(headers))  # fmt: skip
            pending.append((k, v, future))
        sent = []
        for k, v, future in pending:
            m = await future
            sent.append(Sent(m.partition, m.offset, k, v, m.timestamp))
    finally:
        await producer.stop()
    return sent


async def delete_before(settings: Settings, partition: int, offset: int, topic: str = "awards") -> None:
    """Delete the region's records of ``topic`` (its awards by default) before ``offset`` in
    ``partition``, as retention would."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        tp = TopicPartition(settings.kafka.topic(topic), partition)
        await admin.delete_records({tp: RecordsToDelete(before_offset=offset)})
    finally:
        await admin.close()


def source_position(record: ConsumerRecord) -> tuple[int, int]:
    """(source partition, source offset) named by a copy's headers."""
    headers = dict(record.headers)
    return int(headers[SOURCE_PARTITION_HEADER]), int(headers[SOURCE_OFFSET_HEADER])


def assert_each_copied_once(sent: list[Sent], copies: list[ConsumerRecord]) -> None:
    """Every sent record is copied exactly once, to its own partition, and nothing else is."""
    awards = [c for c in copies if c.key != GAP_KEY]
    positions = [source_position(c) for c in awards]
    doubled = {p for p in positions if positions.count(p) > 1}
    assert not doubled, f"copied more than once: {sorted(doubled)[:10]}"
    assert all(c.partition == source_position(c)[0] for c in awards), "a copy left its partition"
    wanted = {(s.partition, s.offset) for s in sent}
    assert set(positions) == wanted, (
        f"missing {sorted(wanted - set(positions))[:10]}, unexpected {sorted(set(positions) - wanted)[:10]}"
    )


async def wait_caught_up(replicator: ReplicatorProcess, source: Settings, within: float = 90) -> None:
    """Until the replicator's checkpoint of every partition reached the source's end as it is now."""
    ends = await end_offsets(source)

    async def covered() -> bool:
        for partition, end in ends.items():
            if await replicator.metric("lb_replicator_checkpoint_offset", partition) < end:
                return False
        return True

    await wait_until(covered, within, f"the replicator from {source.region} reaching {ends}")


async def read_all(kafka: KafkaSettings, topic: str, partitions: int) -> list[ConsumerRecord]:
    """Every committed record of ``topic`` now, partition by partition."""
    found: list[ConsumerRecord] = []

    async def keep(records: list[ConsumerRecord]) -> None:
        found.extend(records)

    await replay(kafka, [TopicPartition(topic, p) for p in range(partitions)], keep)
    return found


async def read_copies(local: Settings, source: str) -> list[ConsumerRecord]:
    """The committed records of ``local``'s topic of ``source``'s replicated awards."""
    topic = local.kafka.topic(replicated_awards_topic(source))
    return await read_all(local.kafka, topic, local.kafka.partitions)


Replicators = Callable[..., Awaitable[ReplicatorProcess]]


@pytest.fixture(scope="session")
def region_servers(tmp_path_factory: pytest.TempPathFactory, kafka_ready: None) -> Iterator[RegionServerPool]:
    """Other regions' servers for this session, on their own ports and data."""
    pool = RegionServerPool(tmp_path_factory.mktemp("region-servers"))
    try:
        yield pool
    finally:
        pool.stop()


@pytest.fixture(scope="session")
async def second_kafka(region_servers: RegionServerPool) -> RegionServers:
    """The servers of region ``us``, next to the shared ones."""
    [servers] = await region_servers.get("us")
    return servers


@pytest.fixture
async def eu_us(settings: Settings, second_kafka: RegionServers) -> AsyncIterator[tuple[Settings, Settings]]:
    """Regions eu (the shared Kafka) and us (the second cluster), this test's topics in both (those
    on the second cluster are deleted afterwards, as ``settings`` does on the shared one)."""
    eu, us = two_regions(settings, second_kafka.bootstrap_servers)
    await bootstrap_topics(eu, us)
    yield eu, us
    await delete_topics(us.kafka, f"{us.kafka.topic_prefix}.")


@contextlib.asynccontextmanager
async def replicator_processes(logs: Path) -> AsyncIterator[Replicators]:
    """Start replicator processes (their logs under ``logs``); all are stopped at the end (their
    logs printed)."""
    started: list[ReplicatorProcess] = []

    async def start(
        local: Settings, source: str, *, name: str = "", wait_ready: bool = True
    ) -> ReplicatorProcess:
        process = ReplicatorProcess(local, source, logs, name)
        started.append(process)
        await process.start(wait_ready=wait_ready)
        return process

    try:
        yield start
    finally:
        for process in started:
            print(f"---- {process.log_path.name}\n{process.tail()}")
            await process.stop()


@pytest.fixture
async def replicators(tmp_path: Path) -> AsyncIterator[Replicators]:
    """Start replicator processes for this test; all are stopped at its end."""
    async with replicator_processes(tmp_path) as start:
        yield start
