"""Runs one region's real processes (``python -m regions.<service>``) as subprocesses for a test.

Each test gets its own topics, Redis keys and ports; the servers are the real ones started by
``ops/services``. Processes can be stopped, SIGKILLed and restarted to inject faults. Ports, the
processes' environment and their start and stop are ``ops.stack``'s, shared with the benchmarks.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import ConsumerRecord, TopicPartition

from ops.stack import (
    SERVICES,
    free_port,
    health_port,
    log_tail,
    region_env,
    spawn,
    terminate,
    wait_ready,
)
from ops.stack import delete_topics as delete_topics  # re-exported: tests import them from here
from ops.stack import with_free_ports as with_free_ports
from regions.core.boards import Board, SortOrder
from regions.intake.client import AwardClient
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.kafka.clients import replay
from regions.stores.redis.projection import RedisProjection
from schema.records import Codec, Reconciliation


def points(board: str, match: str, user: str, amount: int) -> dict[str, object]:
    """One award request's body: ``amount`` points for ``user`` in ``match`` on ``board``."""
    return {"leaderboardId": board, "matchId": match, "userId": user, "awardType": "points", "delta": amount}


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
        port = self.instances[name][1] if name in self.instances else health_port(self.settings, name)
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
            self.processes[name] = await spawn(["-m", f"regions.{service}"], env, self.logs / f"{name}.log")
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
        return log_tail(self.logs / f"{service}.log", lines)

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


def work(seconds: float) -> None:
    """Keep the CPU busy for ``seconds`` without yielding to the event loop (a process over its CPU)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
