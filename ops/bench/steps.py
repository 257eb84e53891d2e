"""Measured steps that more than one benchmark takes.

- ``redis_benchmark``: the projection's Lua script called by redis-benchmark, pipelined: the
  reference the projector's replay (``ops/bench/pipeline``) and rebuild (``ops/bench/scale``) rates
  are compared with;
- ``archive_timed``: the lifecycle's archive of a board's final standings, then a page read back
  (``ops/bench/close``, and step 7 of ``ops/bench/scale``);
- ``reader_cost``: the CPU a read takes in the process that reads (the gateway's share of a read
  that is the projection's client, without GraphQL and HTTP), and its wall time, reads one at a time.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from regions.core.boards import Board
from regions.core.results import page, page_chunks
from regions.lifecycle.archive import Archived, archive_projection
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.connection import ProjectionRedis
from schema.resources import lua_script


def redis_cli(port: int, *args: str) -> str:
    """What ``redis-cli -p PORT ARGS...`` prints."""
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True).stdout


def redis_benchmark(ports: list[int], requests: int) -> float:
    """redis-benchmark calling ``apply_totals`` with one total per call, pipelined: each call a new
    version of a random player, in a version bucket of its own (the script's work per total). On a
    cluster (several ``ports``), against the master that holds the keys' slot (they share a tag)."""
    tag = f"{{bench:{uuid.uuid4().hex[:6]}}}"
    state = f"{tag}:state"
    port = next(p for p in ports if redis_cli(p, "SET", state, "live").strip() == "OK")  # the slot's master
    sha = redis_cli(port, "SCRIPT", "LOAD", lua_script("apply_totals")).strip()
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-n", str(requests), "-P", "64", "-c", "4", "-r", "1000000", "-q",
         "EVALSHA", sha, "4", f"{tag}:rank", state, f"{tag}:v:__rand_int__", f"{tag}:v:m__rand_int__",
         "live", "u:__rand_int__", "__rand_int__", "-__rand_int__", "u:__rand_int__", "3", ""],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"([\d.]+) requests per second", out)
    subprocess.run(["sh", "-c", f"redis-cli -p {port} --scan --pattern '{tag}*' | xargs -r redis-cli -p {port} unlink"],
                   capture_output=True, check=False)  # fmt: skip
    return float(match.group(1)) if match else float("nan")


@dataclass(frozen=True, slots=True)
class Timed:
    archived: Archived
    seconds: float  # the archive's
    first: int  # 0-based rank of the page read back from the middle
    entries: int  # entries on that page
    page_ms: float


async def archive_timed(
    redis: ProjectionRedis, prefix: str, results: CassandraResults, board: Board, chunk_size: int
) -> Timed:
    """Archive ``board``'s projection as result version 1 (as the home lifecycle worker does), then
    read a page of 100 from the middle of it back; the seconds of each."""
    started = time.perf_counter()
    archived = await archive_projection(redis, prefix, results, board, version=1, reason="benchmark",
                                        chunk_size=chunk_size, created_at=datetime.now(UTC))  # fmt: skip
    seconds = time.perf_counter() - started
    players = archived.header.player_count
    middle, started = players // 2, time.perf_counter()
    chunks = await results.chunks(board.id, 1, page_chunks(middle, 100, chunk_size, players))
    entries = page(chunks, middle, 100, chunk_size)
    return Timed(archived, seconds, middle, len(entries), (time.perf_counter() - started) * 1000)


@dataclass(frozen=True, slots=True)
class ReaderCost:
    cpu_ms: float  # this process's CPU per read
    wall_ms: float  # per read, one at a time


async def reader_cost(read: Callable[[], Awaitable[object]], count: int) -> ReaderCost:
    """``count`` reads one after another (after ``count // 10`` to warm up): this process's CPU and
    the wall time per read. The servers' CPU is not counted: they are other processes."""
    for _ in range(count // 10):
        await read()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(count):
        await read()
    return ReaderCost((time.process_time() - cpu) * 1000 / count, (time.perf_counter() - wall) * 1000 / count)
