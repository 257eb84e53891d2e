"""More regions: Kafka clusters (and a Redis each) of their own, and replicator processes between regions.

A region's servers are started by ``ops/services`` in a data folder of their own on free ports, so
they never touch the shared servers, and stopped by it. The broker has a second listener
(``proxied_port``) that advertises ``proxy_port``: a client bootstrapped from there reaches the
broker only through whatever listens on that port (the tests put a proxy there, to cut a region off
at the network level). Used by the tests (through ``tests.clusters``) and the benchmarks.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from aiokafka import TopicPartition

from ops.stack import ROOT, free_port, log_tail, spawn, terminate, wait_ready
from regions.runtime.settings import RegionEndpoint, Settings
from regions.stores.kafka.clients import make_consumer
from regions.stores.kafka.topics import ensure_topics


@dataclass
class RegionServers:
    """A region's servers run by ``ops/services`` under ``data_dir``: a single-node KRaft cluster whose
    second listener (``proxied_port``) advertises ``proxy_port``, and with ``redis_port`` a Redis of
    its own."""

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
        """The broker through ``proxy_port``: for clients in other regions."""
        return f"127.0.0.1:{self.proxy_port}"

    @property
    def redis_url(self) -> str:
        if self.redis_port is None:
            raise RuntimeError(f"the servers under {self.data_dir} have no Redis")
        return f"redis://127.0.0.1:{self.redis_port}/0"

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


async def bootstrap_topics(*regions: Settings) -> None:
    """Each region's topics, those of the replicated awards from every other region included."""
    for settings in regions:
        await ensure_topics(settings.kafka, settings.remote_regions())


async def end_offsets(settings: Settings, kind: str = "awards") -> dict[int, int]:
    """The end (last stable offset) of each partition of the region's topic of ``kind``."""
    tps = [TopicPartition(settings.kafka.topic(kind), p) for p in range(settings.kafka.partitions)]
    consumer = make_consumer(settings.kafka, group_id=None)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    return {tp.partition: int(ends[tp]) for tp in tps}


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

    def _started(self) -> asyncio.subprocess.Process:
        if self.process is None:
            raise RuntimeError(f"the replicator of {self.log_path.stem} was not started")
        return self.process

    @property
    def pid(self) -> int:
        return self._started().pid

    async def start(self, *, wait_ready: bool = True) -> None:
        self.process = await spawn(["-m", "replicator"], self.env(), self.log_path)
        if wait_ready:
            await self.wait_ready()

    async def wait_ready(self, within: float = 60) -> None:
        await wait_ready(self.log_path.stem, self.url, self._started(), self.tail, within)

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
        return log_tail(self.log_path, lines)

    def signal(self, sig: signal.Signals) -> None:
        self._started().send_signal(sig)

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a machine crash."""
        process = self._started()
        process.send_signal(signal.SIGKILL)
        await process.wait()

    async def exited(self, within: float = 60) -> int:
        return await asyncio.wait_for(self._started().wait(), within)

    async def stop(self) -> None:
        if self.process is not None:
            await terminate(self.process)
