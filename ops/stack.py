"""One region's platform processes on the real servers, for the tests and the benchmarks.

Free ports, the LB_* environment that points a process at its settings, the region's topics, and
starting, waiting for and stopping ``python -m regions.<service>`` and friends. The servers are the
ones ``ops/services`` runs; other regions' servers and the replicators between regions are in
``ops.clusters``. The test suite reaches these through ``tests.harness``: the dependency points
from the tests to ``ops``, never back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path

import httpx
from aiokafka.admin import AIOKafkaAdminClient

from regions.runtime.settings import KafkaSettings, Settings

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ("processor", "projector", "audit", "intake")

Process = asyncio.subprocess.Process | subprocess.Popen[bytes]

_handed_out: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A loopback port for a server: free now, never handed out before in this process, and
    outside the kernel's ephemeral range, so the many outgoing client connections of a run
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


def with_free_ports(settings: Settings) -> Settings:
    """``settings`` with a free port for every service of the region."""
    return settings.model_copy(
        update={
            "intake": settings.intake.model_copy(update={"port": free_port()}),
            "processor": settings.processor.model_copy(update={"health_port": free_port()}),
            "projector": settings.projector.model_copy(update={"health_port": free_port()}),
            "audit": settings.audit.model_copy(update={"health_port": free_port()}),
            "lifecycle": settings.lifecycle.model_copy(update={"health_port": free_port()}),
        }
    )


def health_port(settings: Settings, service: str) -> int:
    """Where ``service`` answers /healthz and /readyz: the intake on its own port, the others on
    their health port."""
    return settings.intake.port if service == "intake" else int(getattr(settings, service).health_port)


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
    if settings.lifecycle.idle_poll_interval_s is not None:
        lifecycle["LB_LIFECYCLE__IDLE_POLL_INTERVAL_S"] = str(settings.lifecycle.idle_poll_interval_s)
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
        "LB_INTAKE__ERASURE_REFRESH_S": str(settings.intake.erasure_refresh_s),
        "LB_PROCESSOR__HEALTH_PORT": str(settings.processor.health_port),
        "LB_PROCESSOR__SESSION_TIMEOUT_MS": str(settings.processor.session_timeout_ms),
        "LB_PROCESSOR__STORE_DIR": settings.processor.store_dir,
        "LB_PROJECTOR__HEALTH_PORT": str(settings.projector.health_port),
        "LB_PROJECTOR__MAX_BATCH": str(settings.projector.max_batch),
        "LB_AUDIT__HEALTH_PORT": str(settings.audit.health_port),
    }


async def delete_topics(kafka: KafkaSettings, prefix: str) -> None:
    """Delete every topic whose name starts with ``prefix`` (a run's own topics)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await admin.start()
    try:
        doomed = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if doomed:
            await admin.delete_topics(doomed)
    finally:
        await admin.close()


def data_dir() -> Path:
    """The data folder of the servers ``ops/services`` runs: LB_OPS_DATA_DIR, by default .data."""
    return Path(os.environ.get("LB_OPS_DATA_DIR", ROOT / ".data"))


def server_pids(data: Path) -> dict[str, int]:
    """The servers ``ops/services`` runs from the data folder ``data``, by name (``kafka``,
    ``redis-us``, ...): the process ids in their pid files."""
    return {p.stem: int(p.read_text()) for p in (data / "run").glob("*.pid")}


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` of a process's log, or nothing when it has none yet."""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


async def spawn(args: Sequence[str], env: Mapping[str, str], log: Path) -> asyncio.subprocess.Process:
    """``python args...`` with ``env`` over this process's environment, its output appended to ``log``."""
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, *args, env={**os.environ, **env}, stdout=out, stderr=out
        )


def start_service(service: str, env: Mapping[str, str], logs: Path) -> subprocess.Popen[bytes]:
    """``python -m regions.<service>`` with exactly ``env``, its output in ``logs/<service>.log``."""
    with (logs / f"{service}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", f"regions.{service}"], env=dict(env), stdout=log, stderr=subprocess.STDOUT
        )


def _exit_code(process: Process) -> int | None:
    return process.poll() if isinstance(process, subprocess.Popen) else process.returncode


async def wait_ready(
    name: str,
    url: str,
    process: Process,
    tail: Callable[[], str],
    within: float = 60,
    path: str = "/readyz",
) -> None:
    """Until ``url`` + ``path`` answers 200; fails at once, with the log's ``tail``, if the process exits."""
    async with httpx.AsyncClient() as http:
        deadline = asyncio.get_running_loop().time() + within
        while asyncio.get_running_loop().time() < deadline:
            if (code := _exit_code(process)) is not None:
                raise RuntimeError(f"{name} exited with {code}: {tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(url + path)).status_code == 200:
                    return
            await asyncio.sleep(0.2)
    raise TimeoutError(f"{name} not ready after {within}s: {tail()}")


async def until_ready(
    settings: Settings, procs: Mapping[str, subprocess.Popen[bytes]], logs: Path, within: float
) -> None:
    """Every service in ``procs`` (started by ``start_service`` into ``logs``) answers /readyz
    within ``within`` seconds from now, all together (a loaded machine starts them slowly)."""
    deadline = asyncio.get_running_loop().time() + within
    for name, process in procs.items():
        left = max(0.0, deadline - asyncio.get_running_loop().time())
        url = f"http://127.0.0.1:{health_port(settings, name)}"
        await wait_ready(name, url, process, partial(log_tail, logs / f"{name}.log"), left)


async def terminate(process: asyncio.subprocess.Process, within: float = 20) -> None:
    """SIGTERM, and SIGKILL when the process has not stopped within ``within`` seconds."""
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), within)
        except TimeoutError:
            process.kill()
            await process.wait()


def stop_all(processes: Iterable[subprocess.Popen[bytes]], within: float = 20) -> None:
    """SIGTERM to every process still running, then SIGKILL to those not stopped ``within`` seconds later."""
    running = [p for p in processes if p.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + within
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
