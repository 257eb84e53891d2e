"""Runs one region's real processes (``python -m regions.<service>``) as subprocesses for a test.

Each test gets its own topics, Redis keys and ports; the servers are the real ones started by
``ops/services``. Processes can be stopped, SIGKILLed and restarted to inject faults.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from regions.core.boards import Board, SortOrder
from regions.intake.client import AwardClient
from regions.runtime.settings import KafkaSettings, Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.kafka.clients import replay
from regions.stores.redis.projection import RedisProjection
from schema.records import Codec, Reconciliation

SERVICES = ("processor", "projector", "audit", "intake")


_handed_out: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A loopback port for a test server: free now, never handed out before in this process, and
    outside the kernel's ephemeral range, so the many outgoing client connections of a test run
    (Kafka, Cassandra, Redis) cannot take it between this call and the server's bind."""
    low, high = _ephemeral_range()
    candidates = range(20_000, low) if low > 21_000 else range(high + 1, 65_536)
    for _ in range(200):
        port = random.choice(candidates)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free loopback port in {candidates.start}-{candidates.stop - 1}")


async def wait_ready(
    name: str,
    url: str,
    process: asyncio.subprocess.Process,
    tail: Callable[[], str],
    within: float = 60,
    path: str = "/readyz",
) -> None:
    """Until ``url`` + ``path`` answers 200; fails at once, with the log's ``tail``, if the process exits."""
    async with httpx.AsyncClient() as http:
        deadline = asyncio.get_running_loop().time() + within
        while asyncio.get_running_loop().time() < deadline:
            if process.returncode is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}: {tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(url + path)).status_code == 200:
                    return
            await asyncio.sleep(0.2)
    raise TimeoutError(f"{name} not ready after {within}s: {tail()}")


async def delete_topics(kafka: KafkaSettings, prefix: str) -> None:
    """Delete every topic whose name starts with ``prefix`` (a test's own topics)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await admin.start()
    try:
        doomed = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if doomed:
            await admin.delete_topics(doomed)
    finally:
        await admin.close()


def region_env(settings: Settings) -> dict[str, str]:
    """The LB_* environment that points a subprocess at exactly these settings."""
    k, r, c = settings.kafka, settings.redis, settings.cassandra
    lifecycle = {
        "LB_LIFECYCLE__HEALTH_PORT": str(settings.lifecycle.health_port),
        "LB_LIFECYCLE__POLL_INTERVAL_S": str(settings.lifecycle.poll_interval_s),
        "LB_LIFECYCLE__CHUNK_SIZE": str(settings.lifecycle.chunk_size),
        "LB_LIFECYCLE__FAULT_CHUNK_PAUSE_MS": str(settings.lifecycle.fault_chunk_pause_ms),
        "LB_PROCESSOR__HONOUR_CUTOFFS": str(settings.processor.honour_cutoffs).lower(),
        "LB_WINDOWS__GRACE_S": str(settings.windows.grace_s),
        "LB_WINDOWS__MAX_FUTURE_S": str(settings.windows.max_future_s),
        "LB_WINDOWS__CLOCK_OFFSET_S": str(settings.windows.clock_offset_s),
    }
    if settings.lifecycle.marker_delay_s is not None:
        lifecycle["LB_LIFECYCLE__MARKER_DELAY_S"] = str(settings.lifecycle.marker_delay_s)
    if settings.regions:
        lifecycle["LB_REGIONS"] = json.dumps({n: r.model_dump() for n, r in settings.regions.items()})
    return lifecycle | {
        "LB_REGION": settings.region,
        "LB_KAFKA__BOOTSTRAP_SERVERS": k.bootstrap_servers,
        "LB_KAFKA__TOPIC_PREFIX": k.topic_prefix,
        "LB_KAFKA__PARTITIONS": str(k.partitions),
        "LB_KAFKA__DELIVERY_TIMEOUT_S": str(k.delivery_timeout_s),
        "LB_REDIS__URL": r.url,
        "LB_REDIS__KEY_PREFIX": r.key_prefix,
        "LB_CASSANDRA__CONTACT_POINTS": f'["{c.contact_points[0]}"]',
        "LB_CASSANDRA__PORT": str(c.port),
        "LB_CASSANDRA__KEYSPACE": c.keyspace,
        "LB_CASSANDRA__REQUEST_TIMEOUT_S": str(c.request_timeout_s),
        "LB_INTAKE__PORT": str(settings.intake.port),
        "LB_INTAKE__CATALOG_TTL_S": str(settings.intake.catalog_ttl_s),
        "LB_INTAKE__CATALOG_MAX_STALE_S": str(settings.intake.catalog_max_stale_s),
        "LB_INTAKE__WORKERS": str(settings.intake.workers),
        "LB_PROCESSOR__HEALTH_PORT": str(settings.processor.health_port),
        "LB_PROCESSOR__SESSION_TIMEOUT_MS": str(settings.processor.session_timeout_ms),
        "LB_PROCESSOR__STORE_DIR": settings.processor.store_dir,
        "LB_PROJECTOR__HEALTH_PORT": str(settings.projector.health_port),
        "LB_PROJECTOR__MAX_BATCH": str(settings.projector.max_batch),
        "LB_AUDIT__HEALTH_PORT": str(settings.audit.health_port),
        **(
            {"LB_REGIONS": json.dumps({n: r.model_dump() for n, r in settings.regions.items()})}
            if settings.regions
            else {}
        ),
    }


async def terminate(process: asyncio.subprocess.Process, within: float = 20) -> None:
    """SIGTERM, and SIGKILL when the process has not stopped within ``within`` seconds."""
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), within)
        except TimeoutError:
            process.kill()
            await process.wait()


def with_free_ports(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "intake": settings.intake.model_copy(update={"port": free_port()}),
            "processor": settings.processor.model_copy(update={"health_port": free_port()}),
            "projector": settings.projector.model_copy(update={"health_port": free_port()}),
            "audit": settings.audit.model_copy(update={"health_port": free_port()}),
            "lifecycle": settings.lifecycle.model_copy(update={"health_port": free_port()}),
        }
    )


@dataclass
class Region:
    settings: Settings
    catalog: CassandraCatalog
    projection: RedisProjection
    logs: Path
    env: dict[str, str] = field(init=False)
    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    # Extra instances of a service, by name: (service, health port).
    instances: dict[str, tuple[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = region_env(self.settings)
        self.client = AwardClient(self.intake_url)

    @property
    def intake_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.intake.port}"

    def health_url(self, name: str) -> str:
        if name in self.instances:
            port = self.instances[name][1]
        elif name == "intake":
            port = self.settings.intake.port
        else:
            port = getattr(self.settings, name).health_port
        return f"http://127.0.0.1:{port}"

    async def start(
        self, *names: str, until: str = "/readyz", overrides: dict[str, str] | None = None
    ) -> None:
        """Start the services or named extra instances (all services by default); wait until ready
        (``until="/healthz"``: only until they answer, for a process that starts unready). ``overrides``
        changes settings of these processes only (a clock offset, say)."""
        for name in names or SERVICES:
            service, env = name, {**self.env, **(overrides or {})}
            if name in self.instances:
                service, port = self.instances[name]
                env = {**env, f"LB_{service.upper()}__HEALTH_PORT": str(port)}
            with (self.logs / f"{name}.log").open("ab") as log:
                self.processes[name] = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", f"regions.{service}",
                    env={**os.environ, **env}, stdout=log, stderr=log,
                )  # fmt: skip
        for name in names or SERVICES:
            await self.wait_ready(name, path=until)

    async def start_instance(self, name: str, service: str) -> None:
        """Start one more instance of ``service`` under ``name``, with a health port of its own."""
        self.instances[name] = (service, free_port())
        await self.start(name)

    async def wait_ready(self, service: str, within: float = 60, path: str = "/readyz") -> None:
        await wait_ready(
            service,
            self.health_url(service),
            self.processes[service],
            lambda: self.tail(service),
            within,
            path,
        )

    def tail(self, service: str, lines: int = 30) -> str:
        path = self.logs / f"{service}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def send_signal(self, name: str, sig: signal.Signals) -> None:
        """Send a signal, e.g. SIGSTOP and SIGCONT to freeze a process as a long pause would."""
        self.processes[name].send_signal(sig)

    async def kill(self, service: str) -> None:
        """SIGKILL: no shutdown code runs, as in a machine crash."""
        process = self.processes.pop(service)
        process.send_signal(signal.SIGKILL)
        await process.wait()

    async def stop(self, service: str) -> None:
        await terminate(self.processes.pop(service))

    async def close(self) -> None:
        for service in list(self.processes):
            await self.stop(service)
        await self.client.aclose()

    async def create_board(self, board: Board) -> None:
        if not await self.catalog.create(board):
            raise RuntimeError(f"board {board.id} already exists")

    async def total_of(self, board_id: str, user_id: str) -> int | None:
        """The player's projected total (the board's layout read afresh: it may change)."""
        board = await self.catalog.get(board_id)
        order = SortOrder.DESC if board is None else board.sort_order
        self.projection.layouts.forget(board_id)
        return await self.projection.total_of(board_id, user_id, order)

    async def wait_for_total(self, board_id: str, user_id: str, total: int, within: float = 20) -> None:
        deadline = asyncio.get_running_loop().time() + within
        while (current := await self.total_of(board_id, user_id)) != total:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{board_id}/{user_id}: total {current}, expected {total}")
            await asyncio.sleep(0.05)

    async def reconciliation(self) -> list[Reconciliation]:
        """Everything in this region's reconciliation topic so far."""
        codec, found = Codec(), []
        topic = self.settings.kafka.topic("reconciliation")
        tps = [TopicPartition(topic, p) for p in range(self.settings.kafka.partitions)]

        async def keep(records: list[ConsumerRecord]) -> None:
            found.extend(codec.reconciliation(r.value) for r in records)

        await replay(self.settings.kafka, tps, keep)
        return found

    @staticmethod
    async def wait_until(
        predicate: Callable[[], Awaitable[bool]], within: float = 30, what: str = "condition"
    ) -> None:
        """Poll an async predicate until it holds."""
        deadline = asyncio.get_running_loop().time() + within
        while not await predicate():
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{what} did not hold within {within}s")
            await asyncio.sleep(0.1)
