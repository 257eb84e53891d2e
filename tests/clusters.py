"""More regions for tests: Kafka clusters of their own, and replicator processes between them.

Each region's servers (a Kafka cluster and a Redis) are started by ``ops/services`` in a data
folder of their own on free ports, so they never touch the shared servers, and stopped by it at the
end of the session. The broker has a second listener that advertises a proxy's port
(``RegionServers.proxy``): a client bootstrapped from the proxy reaches the broker only through it,
so a test can cut that client off at the network level. In ``eu_us`` the shared Kafka plays region
``eu``, the cluster of region ``us`` region ``us``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from regions.runtime.settings import KafkaSettings, RegionEndpoint, Settings
from regions.stores.kafka.clients import ensure_topics, make_consumer, make_producer, replay
from schema.replication import (
    GAP_KEY,
    SOURCE_OFFSET_HEADER,
    SOURCE_PARTITION_HEADER,
    replicated_awards_topic,
)
from tests.harness import Region, delete_topics, free_port, wait_ready
from tests.proxy import TcpProxy

wait_until = Region.wait_until

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class RegionServers:
    """A region's servers run by ``ops/services`` under ``data_dir``: a single-node KRaft cluster whose
    second listener (``proxied_port``) advertises ``proxy_port``, where ``proxy()`` listens, and with
    ``redis_port`` a Redis of its own."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    controller_port: int = field(default_factory=free_port)
    proxied_port: int = field(default_factory=free_port)
    proxy_port: int = field(default_factory=free_port)
    redis_port: int | None = None

    @property
    def bootstrap_servers(self) -> str:
        """The broker's own listener: for the region's own processes."""
        return f"127.0.0.1:{self.port}"

    @property
    def proxied_bootstrap_servers(self) -> str:
        """The broker through ``proxy()``: for clients in other regions."""
        return f"127.0.0.1:{self.proxy_port}"

    @property
    def redis_url(self) -> str:
        if self.redis_port is None:
            raise RuntimeError(f"the servers under {self.data_dir} have no Redis")
        return f"redis://127.0.0.1:{self.redis_port}/0"

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

    @property
    def _kinds(self) -> tuple[str, ...]:
        return ("kafka",) if self.redis_port is None else ("kafka", "redis")

    def _services(self, *args: str) -> None:
        env = {
            **os.environ,
            "LB_OPS_DATA_DIR": str(self.data_dir),
            "LB_OPS_KAFKA_PORT": str(self.port),
            "LB_OPS_KAFKA_CONTROLLER_PORT": str(self.controller_port),
            "LB_OPS_KAFKA_PROXIED_PORT": str(self.proxied_port),
            "LB_OPS_KAFKA_PROXIED_ADVERTISED": self.proxied_bootstrap_servers,
            **({} if self.redis_port is None else {"LB_OPS_REDIS_PORT": str(self.redis_port)}),
        }
        done = subprocess.run([str(ROOT / "ops/services"), *args], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"ops/services {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        self._services("up", *self._kinds)

    def stop(self) -> None:
        self._services("down", *self._kinds)


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


def two_regions(eu: Settings, us_bootstrap: str) -> tuple[Settings, Settings]:
    """Settings of regions ``eu`` (``eu``'s own Kafka) and ``us`` (``us_bootstrap``), same topic prefix."""
    regions = {
        "eu": RegionEndpoint(kafka_bootstrap_servers=eu.kafka.bootstrap_servers),
        "us": RegionEndpoint(kafka_bootstrap_servers=us_bootstrap),
    }
    eu = eu.model_copy(update={"region": "eu", "regions": regions})
    us = eu.model_copy(
        update={"region": "us", "kafka": eu.kafka.model_copy(update={"bootstrap_servers": us_bootstrap})}
    )
    return eu, us


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


async def delete_before(settings: Settings, partition: int, offset: int) -> None:
    """Delete the region's awards before ``offset`` in ``partition``, as retention would."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        tp = TopicPartition(settings.kafka.topic("awards"), partition)
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


async def end_offsets(settings: Settings) -> dict[int, int]:
    """The end (last stable offset) of each partition of the region's awards topic."""
    tps = [TopicPartition(settings.kafka.topic("awards"), p) for p in range(settings.kafka.partitions)]
    consumer = make_consumer(settings.kafka, group_id=None)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    return {tp.partition: int(ends[tp]) for tp in tps}


async def wait_caught_up(replicator: ReplicatorProcess, source: Settings, within: float = 90) -> None:
    """Until the replicator's checkpoint of every partition reached the source's end as it is now."""
    ends = await end_offsets(source)

    async def covered() -> bool:
        for partition, end in ends.items():
            if await replicator.metric("lb_replicator_checkpoint_offset", partition) < end:
                return False
        return True

    await wait_until(covered, within, f"the replicator from {source.region} reaching {ends}")


async def bootstrap_topics(*regions: Settings) -> None:
    for settings in regions:
        await ensure_topics(settings.kafka, settings.remote_regions())


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


class ReplicatorProcess:
    """``python -m replicator`` copying ``source``'s awards into region ``local``, as a subprocess."""

    def __init__(self, local: Settings, source: str, logs: Path, name: str = "") -> None:
        self.local, self.source = local, source
        self.port = free_port()
        self.log_path = logs / f"replicator-{local.region}-from-{source}{name}.log"
        self.process: asyncio.subprocess.Process | None = None

    def env(self) -> dict[str, str]:
        k = self.local.kafka
        return {
            "LB_REGION": self.local.region,
            "LB_REGIONS": json.dumps({name: r.model_dump() for name, r in self.local.regions.items()}),
            "LB_KAFKA__BOOTSTRAP_SERVERS": k.bootstrap_servers,
            "LB_KAFKA__TOPIC_PREFIX": k.topic_prefix,
            "LB_KAFKA__PARTITIONS": str(k.partitions),
            "LB_REPLICATOR__SOURCE_REGION": self.source,
            "LB_REPLICATOR__HEALTH_PORT": str(self.port),
            "LB_REPLICATOR__LAG_INTERVAL_S": "0.2",
            "LB_REPLICATOR__SOURCE_TIMEOUT_MS": "3000",
            "LB_REPLICATOR__SOURCE_RETRY_MAX_S": "2",
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, *, wait_ready: bool = True) -> None:
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "replicator", env={**os.environ, **self.env()}, stdout=log, stderr=log
            )
        if wait_ready:
            await self.wait_ready()

    async def wait_ready(self, within: float = 60) -> None:
        if self.process is None:
            raise RuntimeError("the replicator was not started")
        await wait_ready(self.log_path.stem, self.url, self.process, self.tail, within)

    async def metrics(self) -> dict[str, float]:
        """The replicator's Prometheus samples by name with labels, e.g. ``lb_replicator_gaps_total{partition="0",source="us"}``."""
        async with httpx.AsyncClient() as http:
            text = (await http.get(self.url + "/metrics")).text
        samples = {}
        for line in text.splitlines():
            if line.startswith("lb_replicator"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        return samples

    async def metric(self, name: str, partition: int | None = None) -> float:
        labels = (
            f'partition="{partition}",source="{self.source}"'
            if partition is not None
            else f'source="{self.source}"'
        )
        return (await self.metrics()).get(f"{name}{{{labels}}}", 0.0)

    def tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a machine crash."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def exited(self, within: float = 60) -> int:
        assert self.process is not None
        return await asyncio.wait_for(self.process.wait(), within)

    async def stop(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), 20)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


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


@pytest.fixture
async def replicators(tmp_path: Path) -> AsyncIterator[Replicators]:
    """Start replicator processes for this test; all are stopped at its end (their logs printed)."""
    started: list[ReplicatorProcess] = []

    async def start(
        local: Settings, source: str, *, name: str = "", wait_ready: bool = True
    ) -> ReplicatorProcess:
        process = ReplicatorProcess(local, source, tmp_path, name)
        started.append(process)
        await process.start(wait_ready=wait_ready)
        return process

    try:
        yield start
    finally:
        for process in started:
            print(f"---- {process.log_path.name}\n{process.tail()}")
            await process.stop()
