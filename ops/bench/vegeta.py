"""An outside, compiled, open-loop load generator for the award benchmarks: vegeta.

``Vegeta`` sends a ``Schedule``'s signed award requests with vegeta (built once from the Go module
proxy into the platform's cache), so the load's own CPU is a compiled program's, apart from every
process measured. The requests are signed and written before the load starts (vegeta reads them as
JSON targets), so nothing is computed per request while it runs, and the answers are read once it
is over: a benchmark measures every process's CPU over ``attack`` alone, not over that work. vegeta
paces its hits at the rate whatever the answers (a slow intake gets more connections, up to
``max_connections``); each hit's latency counts from the time vegeta attempted it, so a late answer
is never hidden.

Each vegeta result becomes a ``Reply``: scheduled and sent at the hit's timestamp, done at timestamp
+ latency, on this process's ``time.perf_counter`` clock (so freshness is measured as with the
in-process generator), with the accepted awards' last (region, partition, offset) from its body.
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import msgspec

from ops.bench.load import Reply, Results, Schedule
from regions.core.signing import sign

VERSION = "v12.13.0"
MODULE = "github.com/tsenart/vegeta/v12"
CACHE = (
    Path(
        os.environ.get("LB_OPS_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "leaderboard-platform"
    )
    / "bin"
)


def vegeta_binary() -> Path:
    """vegeta on the PATH, else the one built into the cache, else built now (about a minute)."""
    found = shutil.which("vegeta")
    if found:
        return Path(found)
    built = CACHE / "vegeta"
    if built.exists():
        return built
    if shutil.which("go") is None:
        raise SystemExit("vegeta is not installed and Go is not there to build it: install Go 1.22 or newer, "
                         f"or put vegeta on the PATH ({MODULE}@{VERSION})")  # fmt: skip
    print(f"== building vegeta {VERSION} from the Go module proxy into {CACHE} (once; about a minute) ...",
          flush=True)  # fmt: skip
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["go", "install", f"{MODULE}@{VERSION}"], check=True, env={**os.environ, "GOBIN": str(CACHE)}
    )
    return built


class _Result(msgspec.Struct):
    seq: int
    code: int
    timestamp: str
    latency: int  # ns
    body: str | None = None
    error: str = ""


_accepted = msgspec.json.Decoder(dict[str, list[dict[str, object]]])


@dataclass
class Vegeta:
    """One vegeta process sending ``schedule`` (its port, rate, batch, duration, players and
    ``max_connections``). Used as an async context: entering it writes the signed targets, so a
    caller measures the attack alone (``attack``), then adds its answers (``collect``)."""

    schedule: Schedule
    seed: int = 1
    cpu_s: float = 0.0  # vegeta's own CPU (user + system), once ``attack`` returned
    _folder: tempfile.TemporaryDirectory[str] | None = None
    _count: int = 0
    _clock_offset: float = 0.0

    async def __aenter__(self) -> Vegeta:
        self._folder = tempfile.TemporaryDirectory(prefix="lb-vegeta-")
        try:
            self._count = await asyncio.to_thread(self._targets, self._path("targets.json"))
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def _path(self, name: str) -> Path:
        if self._folder is None:
            raise RuntimeError("use Vegeta as an async context: entering it writes the targets")
        return Path(self._folder.name) / name

    def _targets(self, path: Path) -> int:
        """Every request of the schedule, signed, as vegeta's JSON targets; returns their count."""
        s = self.schedule
        rng = random.Random(self.seed)
        count = max(1, round(s.rate * s.duration / s.batch))
        url = f"http://127.0.0.1:{s.port}/internal/awards" + (f"?{s.query}" if s.query else "")
        ts = int(time.time())  # valid for the intake's clock skew (300 s) from now
        with path.open("wb") as out:
            for _ in range(count):
                awards = [{"leaderboardId": s.board, "matchId": uuid.uuid4().hex,
                           "userId": f"p{rng.randrange(s.players)}", "awardType": "points",
                           "delta": rng.randint(1, 100)} for _ in range(s.batch)]  # fmt: skip
                body = msgspec.json.encode(awards[0] if s.batch == 1 else {"awards": awards})
                target = {"method": "POST", "url": url, "body": base64.b64encode(body).decode(),
                          "header": {"Content-Type": ["application/json"], "X-Award-Key-Id": ["dev"],
                                     "X-Award-Timestamp": [str(ts)],
                                     "X-Award-Signature": [sign("dev-secret", ts, body)]}}  # fmt: skip
                out.write(msgspec.json.encode(target) + b"\n")
        return count

    async def attack(self) -> None:
        """Send the schedule (at its ``start_at``, if set) and wait for its last answer."""
        s = self.schedule
        binary = vegeta_binary()
        if s.start_at:
            await asyncio.sleep(max(0.0, s.start_at - time.time()))
        rate = f"{round(s.rate / s.batch * 60)}/1m"  # vegeta takes a whole number per unit
        command = [str(binary), "attack", "-format=json", f"-targets={self._path('targets.json')}",
                   f"-rate={rate}", f"-duration={s.duration}s", f"-max-connections={s.max_connections}",
                   f"-connections={s.max_connections}", "-workers=32", f"-max-workers={s.max_connections}",
                   "-timeout=60s", "-keepalive=true", f"-output={self._path('results.bin')}"]  # fmt: skip
        self._clock_offset = time.time() - time.perf_counter()
        code, self.cpu_s, stderr = await asyncio.to_thread(_run_measured, command, self._path("stderr"))
        if code != 0:
            raise RuntimeError(f"vegeta exited with {code}: {stderr}")

    async def collect(self, results: Results) -> None:
        """Add every answer of the attack to ``results`` (``add``, with the schedule's batch)."""
        s = self.schedule
        encoded = await asyncio.to_thread(
            subprocess.run,
            [str(vegeta_binary()), "encode", "-to", "json", str(self._path("results.bin"))],
            capture_output=True,
            check=True,
        )
        # Hit n was due at the first hit's time + n intervals: a hit vegeta sent later than that (its
        # workers all busy) is late, and its latency counts from when it was due.
        found = sorted((msgspec.json.decode(line, type=_Result) for line in encoded.stdout.splitlines()),
                       key=lambda r: r.seq)  # fmt: skip
        interval = s.batch / s.rate
        first = _epoch(found[0].timestamp) - self._clock_offset if found else 0.0
        for result in found:
            sent = _epoch(result.timestamp) - self._clock_offset
            results.add(
                _reply(first + result.seq * interval, sent, sent + result.latency / 1e9, result), s.batch
            )
        if len(found) < self._count * 0.99:
            print(f"   vegeta sent {len(found)} of the {self._count} requests of its schedule", file=sys.stderr)
        results.generator_cpu_s += self.cpu_s


def _reply(due: float, sent: float, done: float, result: _Result) -> Reply:
    status = result.code
    if status != 202:
        return Reply(due, sent, done, status)
    accepted = _accepted.decode(base64.b64decode(result.body or ""))["accepted"]
    last = accepted[-1]
    return Reply(due, sent, done, status, len(accepted), str(last["region"]), int(str(last["partition"])),
                 int(str(last["offset"])), sum(a.get("applied") is not None for a in accepted))  # fmt: skip


_RFC3339 = re.compile(r"(?P<whole>[^.]{19})(?:\.(?P<fraction>\d+))?(?P<zone>Z|[+-]\d\d:\d\d)")


def _epoch(stamp: str) -> float:
    """RFC 3339 with up to nanoseconds (vegeta's timestamps, whose fraction is left out at a whole
    second) as seconds since the epoch."""
    found = _RFC3339.fullmatch(stamp)
    if found is None:
        raise ValueError(f"vegeta gave a timestamp that is not RFC 3339: {stamp!r}")
    zone = found["zone"]
    base = datetime.fromisoformat(found["whole"] + ("+00:00" if zone == "Z" else zone)).timestamp()
    return base + (float(f"0.{found['fraction']}") if found["fraction"] else 0.0)


def _run_measured(command: list[str], stderr: Path) -> tuple[int, float, str]:
    """Run ``command`` to its end: its exit status, the CPU it used (user + system, from the kernel's
    accounting of this one child) and what it wrote to stderr."""
    with stderr.open("wb") as err:
        child = subprocess.Popen(command, stderr=err)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it
    return child.returncode, usage.ru_utime + usage.ru_stime, stderr.read_text(errors="replace")
