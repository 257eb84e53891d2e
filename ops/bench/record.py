"""Recorded runs: every benchmark writes what it measured as a JSON file, for ``ops/bench/report``.

A run is ``.data/bench/<benchmark>/<UTC start, 20260102T030405Z>-<short commit>.json``::

    {"format": 1, "benchmark": "pipeline", "argv": ["--rates", "500,1000"],
     "started_at": "2026-01-02T03:04:05Z", "ended_at": "...", "seconds": 312.4,
     "commit": {"sha": "...", "short": "abc1234", "dirty": false, "subject": "..."},
     "machine": {"cpus": 2, "cpu_model": "...", "memory_mib": 7958, "kernel": "...", "python": "3.11.7"},
     "load_average": {"start": [0.4, 0.9, 1.2], "end": [...]}, "note": "",
     "settings": {"rate": 3000, ...}, "figures": {...}}

``settings`` are the script's parsed options, ``figures`` what it printed as numbers (percentiles
under ``p50``/``p95``/``p99``, never formatted text); a NaN (nothing measured) is ``null``.
``LB_OPS_BENCH_NOTE`` is kept as ``note``: the conditions of the run in words ("the machine was
shared with test suites"). The load average at both ends says how busy the machine was.

``recorded`` runs a benchmark and writes its run; ``read_run`` and ``newest`` read them back.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / ".data" / "bench"
FORMAT = 1
STAMP = "%Y%m%dT%H%M%SZ"

Figures = dict[str, Any]


def jsonable(value: Any) -> Any:
    """``value`` as JSON types: NaN and infinities as None, dataclasses and mappings as objects
    (keys as text), tuples and sets as lists, paths as text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool | int | str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{value!r} ({type(value).__name__}) cannot be recorded: give numbers, text, lists or mappings")


def machine() -> dict[str, Any]:
    """What the figures depend on of the machine: CPUs, their model, memory, kernel, Python."""
    info = _proc("cpuinfo")
    model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    memory = next((int(line.split()[1]) // 1024 for line in _proc("meminfo") if line.startswith("MemTotal:")), 0)
    return {"cpus": os.cpu_count(), "cpu_model": model or platform.processor(), "memory_mib": memory,
            "kernel": f"{platform.system()} {platform.release()}", "python": platform.python_version()}  # fmt: skip


def _proc(name: str) -> list[str]:
    try:
        return Path(f"/proc/{name}").read_text().splitlines()
    except OSError:
        return []


def commit(root: Path = ROOT) -> dict[str, Any]:
    """The checkout's commit, and whether tracked files differ from it (``dirty``)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    sha = git("rev-parse", "HEAD")
    if not sha:
        return {"sha": "", "short": "nogit", "dirty": False, "subject": ""}
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return {"sha": sha, "short": sha[:7], "dirty": dirty, "subject": git("log", "-1", "--format=%s")}


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Recording:
    """A run being measured: what is known of it before the figures."""

    benchmark: str
    settings: Mapping[str, Any]
    argv: list[str]
    started: datetime
    load_at_start: tuple[float, float, float]

    @classmethod
    def start(
        cls, benchmark: str, settings: argparse.Namespace | Mapping[str, Any], argv: Sequence[str] | None = None
    ) -> Recording:
        """A run starting now, with ``settings`` parsed from ``argv`` (by default the command line's)."""
        options = vars(settings) if isinstance(settings, argparse.Namespace) else dict(settings)
        given = list(sys.argv[1:] if argv is None else argv)
        return cls(benchmark, options, given, datetime.now(UTC), os.getloadavg())

    def document(self, figures: Mapping[str, Any], ended: datetime) -> dict[str, Any]:
        document: dict[str, Any] = jsonable({
            "format": FORMAT, "benchmark": self.benchmark, "argv": self.argv,
            "started_at": _iso(self.started), "ended_at": _iso(ended),
            "seconds": round((ended - self.started).total_seconds(), 1),
            "commit": commit(), "machine": machine(),
            "load_average": {"start": self.load_at_start, "end": os.getloadavg()},
            "note": os.environ.get("LB_OPS_BENCH_NOTE", ""),
            "settings": self.settings, "figures": figures,
        })  # fmt: skip
        return document

    def write(self, figures: Mapping[str, Any], runs: Path = RUNS) -> Path:
        """The run's file, ``runs/<benchmark>/<start>-<commit>.json``, written whole or not at all."""
        document = self.document(figures, datetime.now(UTC))
        folder = runs / self.benchmark
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.started.strftime(STAMP)}-{document['commit']['short']}.json"
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n")
        partial.replace(path)
        return path


def recorded(
    benchmark: str, settings: argparse.Namespace, measure: Callable[[], Figures | None], runs: Path = RUNS
) -> Path | None:
    """Runs ``measure`` (the benchmark: it prints as it goes and returns its figures) and records
    the run; a benchmark that returns None (nothing measured, a clean-up) records nothing."""
    recording = Recording.start(benchmark, settings)
    figures = measure()
    if figures is None:
        return None
    path = recording.write(figures, runs)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"\n== recorded: {shown} (ops/bench/report puts it into the README)", flush=True)
    return path


# ------------------------------------------------------------------ reading runs back


@dataclass(frozen=True, slots=True)
class RecordedRun:
    path: Path
    document: dict[str, Any]

    @property
    def benchmark(self) -> str:
        return str(self.document["benchmark"])

    @property
    def figures(self) -> dict[str, Any]:
        return dict(self.document["figures"])

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.document["settings"])


def read_run(path: Path) -> RecordedRun:
    """A run file; a ValueError naming the file and the field when it is not one."""
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error}); remove it or record the run again") from None
    missing = [k for k in ("format", "benchmark", "started_at", "commit", "machine", "settings", "figures")
               if k not in document]  # fmt: skip
    if missing:
        raise ValueError(f"{path}: not a recorded run, it lacks {', '.join(missing)}")
    if document["format"] != FORMAT:
        raise ValueError(f"{path}: format {document['format']}, this report reads format {FORMAT}")
    return RecordedRun(path, document)


def runs_of(benchmark: str, *folders: Path) -> list[Path]:
    """The run files of ``benchmark`` in each of ``folders``, oldest first (by start, then commit)."""
    found = [p for folder in folders for p in (folder / benchmark).glob("*.json")]
    return sorted(found, key=lambda p: p.name)


def newest(benchmark: str, *folders: Path) -> Path | None:
    found = runs_of(benchmark, *folders)
    return found[-1] if found else None
