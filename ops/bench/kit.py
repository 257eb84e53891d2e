"""The benchmarks' kit: how they offer load, what they measure of it and how they print it.

- Load: ``closed_loop`` (each worker sends its next request once its last was answered: the most a
  server answers) and ``paced`` (requests at fixed times, ``rate`` a second spread over the workers,
  latency counted from each one's scheduled time, so a server that stalls cannot hide it by slowing
  the load). ``Connection`` is the keep-alive HTTP/1.1 client they send on, cheap enough to leave
  the CPU to the servers. The open loop of signed awards through the intake, which never waits for
  an answer before the next request, is ``ops.bench.load``, built on the same connection.
- Figures: ``percentile`` and ``percentiles``, linear between the closest ranks; ``distribution``
  (count, p50, p95, p99 and max) and ``by_process`` are figures as a run records them
  (``ops.bench.record``, which every benchmark writes its run with).
- Processes: ``cpu_seconds``, ``rss_mib``, ``children`` and ``parent_pid`` from /proc, and
  ``CpuClock`` for the CPU each named process uses over a stretch of time.
- Printing: ``shown`` (``p50 1.0  p95 2.0  p99 3.0``), ``table`` (a row a process and one for all).
- Options: ``parser``, whose --help is the script's docstring as written.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

QUANTILES = (0.5, 0.95, 0.99)
CONTENT_LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)

Send = Callable[[int], Awaitable[object]]  # one request from the worker of this index, until answered


# ------------------------------------------------------------------ figures


def _at(ordered: Sequence[float], q: float) -> float:
    if not ordered:
        return math.nan
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q`` quantile (0 to 1) of ``values``, linear between the two closest ranks (numpy's
    default, ``statistics.quantiles(method="inclusive")``); NaN when there are none."""
    return _at(sorted(values), q)


def percentiles(
    values: Iterable[float], qs: Sequence[float] = QUANTILES, *, scale: float = 1.0
) -> dict[float, float]:
    """Each quantile of ``qs`` of ``values`` (times ``scale``: 1000 turns seconds into ms)."""
    ordered = sorted(values)
    return {q: _at(ordered, q) * scale for q in qs}


def distribution(values: Iterable[float], *, scale: float = 1.0) -> dict[str, float]:
    """``values`` as a run records them: how many, each quantile of ``QUANTILES`` (``p50``,
    ``p95``, ``p99``) and the largest, times ``scale``; NaN for the quantiles of none."""
    ordered = sorted(values)
    figures: dict[str, float] = {"count": len(ordered)}
    figures |= {f"p{q * 100:g}": _at(ordered, q) * scale for q in QUANTILES}
    figures["max"] = ordered[-1] * scale if ordered else math.nan
    return figures


def by_process(**columns: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Per-process columns (``cpu_percent={"intake": 40.0}, rss_mib={...}``) turned into one
    mapping a process: ``{"intake": {"cpu_percent": 40.0, "rss_mib": ...}}``."""
    found: dict[str, dict[str, float]] = {}
    for column, values in columns.items():
        for name, value in values.items():
            found.setdefault(name, {})[column] = value
    return found


def shown(figures: Mapping[float, float], spec: str = ".0f", *, unit: str = "", sep: str = "  ") -> str:
    """``p50 12  p95 30  p99 41``: each quantile's figure formatted with ``spec``, then ``unit``."""
    return sep.join(f"p{q * 100:g} {value:{spec}}{unit}" for q, value in figures.items())


# ------------------------------------------------------------------ processes


def _stat(pid: int | Path) -> list[str]:
    """The fields of /proc/PID/stat (or of a thread's folder, /proc/PID/task/TID) after the command's
    name (which may hold spaces): state first."""
    folder = pid if isinstance(pid, Path) else Path(f"/proc/{pid}")
    return (folder / "stat").read_text().rsplit(")", 1)[1].split()


def _cpu_ticks(fields: list[str]) -> int:
    """User and system CPU of a process or thread, in clock ticks, from its ``_stat`` fields."""
    return int(fields[11]) + int(fields[12])


def parent_pid(pid: int) -> int:
    return int(_stat(pid)[1])


def children(pid: int) -> list[int]:
    """The processes ``pid`` forked (several intake or gateway workers on one port, say)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def cpu_seconds(*pids: int) -> float:
    """User and system CPU seconds of the processes, together; one that has exited counts for nothing."""
    total = 0
    for pid in pids:
        try:
            fields = _stat(pid)
        except OSError:
            continue
        total += _cpu_ticks(fields)
    return total / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int | Literal["self"] = "self") -> float:
    """The resident memory of a process (this one by default), MiB; NaN when it has none (a zombie)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


@dataclass(frozen=True, slots=True)
class CpuUse:
    wall: float  # seconds since the clock started
    seconds: dict[str, float]  # CPU seconds each process used over them

    def cores(self) -> dict[str, float]:
        """Each process's CPU as a share of one core (1.0: a core busy all along)."""
        return {name: used / self.wall for name, used in self.seconds.items()}

    def percent(self) -> dict[str, float]:
        return {name: used / self.wall * 100 for name, used in self.seconds.items()}


class CpuClock:
    """The CPU each named process uses from the moment the clock is made; ``read`` any number of times."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self._pids = dict(pids)
        self._started = time.perf_counter()
        self._cpu = {name: cpu_seconds(pid) for name, pid in self._pids.items()}

    def read(self) -> CpuUse:
        wall = time.perf_counter() - self._started
        return CpuUse(wall, {name: cpu_seconds(pid) - self._cpu[name] for name, pid in self._pids.items()})


JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
"""The names of a JVM's JIT compiler threads as /proc gives them (cut to 15 characters)."""


def jit_seconds(pid: int) -> dict[int, float]:
    """CPU seconds each live JIT compiler thread of a JVM has used, by thread id; none for any other
    process. The JVM starts and ends compiler threads as its compile queue grows and shrinks, so
    compare two readings thread by thread (``JitClock``). A process that has exited has none."""
    hz = os.sysconf("SC_CLK_TCK")
    used: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            if (task / "comm").read_text().strip() not in JIT_THREADS:
                continue
            fields = _stat(task)
        except OSError:  # the thread ended between the listing and the read
            continue
        used[int(task.name)] = _cpu_ticks(fields) / hz
    return used


class JitClock:
    """The CPU the JVMs among the named processes spend compiling code (their JIT compiler threads),
    from the moment the clock is made. A compiler thread that ends before ``read`` takes its share
    of the interval with it, so the figure is a floor."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self._pids = dict(pids)
        self._started = time.perf_counter()
        self._threads = {name: jit_seconds(pid) for name, pid in self._pids.items()}

    def read(self) -> CpuUse:
        wall = time.perf_counter() - self._started
        used = {}
        for name, pid in self._pids.items():
            before, now = self._threads[name], jit_seconds(pid)
            if now or before:
                used[name] = sum(cpu - before.get(tid, 0.0) for tid, cpu in now.items())
        return CpuUse(wall, used)


# ------------------------------------------------------------------ load


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1 on asyncio streams, opened by ``open`` or on
    first use: the cheapest client there is, to leave the CPU to the servers under load."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self) -> Connection:
        await self._streams()
        return self

    async def _streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self._port, limit=1 << 20)
        return self._reader, self._writer

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send a whole request (head and body); the answer's status and body."""
        reader, writer = await self._streams()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = CONTENT_LENGTH.search(head)
        body = await reader.readexactly(int(length.group(1)) if length else 0)
        return int(head.split(maxsplit=2)[1]), body

    def closed(self) -> bool:
        """The server closed it (uvicorn closes idle keep-alive connections after a few seconds)."""
        return self._reader is not None and self._reader.at_eof()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


@dataclass
class Run:
    """What a loop measured: the latency of every answered request, in seconds, over ``seconds``."""

    label: str
    mode: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies, 0.99) * 1000

    def figures(self) -> dict[str, object]:
        """As a run records it: label, mode, requests, seconds, rate and the latency's ``distribution`` (ms)."""
        return {"label": self.label, "mode": self.mode, "requests": self.requests, "seconds": self.seconds,
                "rate": self.rate if self.seconds else math.nan,
                "latency_ms": distribution(self.latencies, scale=1000)}  # fmt: skip

    def line(self) -> str:
        figures = shown(percentiles(self.latencies, scale=1000), "6.1f", unit=" ms", sep="   ")
        return f"  {self.label:<29} {self.mode:<16} {self.rate:>8,.0f} q/s   {figures}"


async def closed_loop(label: str, send: Send, concurrency: int, seconds: float, at_least: int = 0) -> Run:
    """``concurrency`` workers, each sending its next request as soon as its last was answered, for
    ``seconds`` and until ``at_least`` requests were answered; latency from send to answer."""
    run = Run(label, f"closed c={concurrency}")
    deadline = time.perf_counter() + seconds

    async def worker(index: int) -> None:
        while (began := time.perf_counter()) < deadline or run.requests < at_least:
            await send(index)
            run.latencies.append(time.perf_counter() - began)

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    run.seconds = time.perf_counter() - started
    return run


async def paced(label: str, send: Send, concurrency: int, rate: float, seconds: float) -> Run:
    """``rate`` requests a second for ``seconds``: request n goes from worker n mod ``concurrency``
    at its scheduled time (or as soon as that worker is free); latency from the scheduled time."""
    run = Run(label, f"paced {rate:.0f} q/s")
    total, start = int(rate * seconds), time.perf_counter() + 0.05

    async def worker(index: int) -> None:
        for n in range(index, total, concurrency):
            due = start + n / rate
            if (delay := due - time.perf_counter()) > 0:
                await asyncio.sleep(delay)
            await send(index)
            run.latencies.append(time.perf_counter() - due)

    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    run.seconds = time.perf_counter() - start
    return run


# ------------------------------------------------------------------ printing and options


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    values: Mapping[str, float]  # by process
    spec: str  # a value's format, its width first: "7.1f"
    summed: bool = True  # the row of all shows the column's sum
    gap: str = " "  # before the column


def table(width: int, columns: Sequence[Column]) -> list[str]:
    """A header, a row a process (those of the first column, ``width`` wide) and a row of all."""

    def row(label: str, cells: Iterable[str]) -> str:
        return (f"{label:{width}}" + "".join(cells)).rstrip()

    def size(column: Column) -> int:
        return int(column.spec.split(".")[0])

    lines = [row("", (f"{c.gap}{c.title:>{size(c)}}" for c in columns))]
    for name in columns[0].values:
        lines.append(row(name, (f"{c.gap}{c.values[name]:{c.spec}}" for c in columns)))
    total = (
        f"{c.gap}{sum(c.values.values()):{c.spec}}" if c.summed else f"{c.gap}{'':{size(c)}}" for c in columns
    )
    lines.append(row("all", total))
    return lines


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's options; its --help starts with ``doc`` (the script's docstring), kept as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
