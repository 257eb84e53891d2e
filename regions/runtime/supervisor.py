"""Runs one region's processes for ``ops/run`` and keeps them running (``python -m regions.runtime.supervisor``).

With several regions (``settings.regions``), the region also runs one replicator per other region,
copying that region's awards here; ``ops/run`` starts one supervisor per region.

A process that exits unasked is restarted with backoff and the restart is reported; a crash loop
(see ``regions.core.supervision``) ends the run with the tail of that process's log and what to do.
Before anything starts, every port the region needs is checked: when one is taken, nothing starts
and the message names the port, its process and what holds it, when that can be told.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from regions.core.supervision import CrashPolicy, GiveUp, after_crash
from regions.runtime.settings import Settings, UnknownSettingsError, describe_refusal, load_settings


@dataclass(frozen=True, slots=True)
class Program:
    name: str
    argv: tuple[str, ...]
    host: str | None = None  # where it listens (its /readyz), if it does
    port: int | None = None
    env: tuple[tuple[str, str], ...] = ()  # settings of its own, over the supervisor's environment


def region_programs(settings: Settings) -> list[Program]:
    """The processes of one region, with the port each one listens on."""
    python, host = sys.executable, settings.intake.host
    return [
        Program("processor", (python, "-m", "regions.processor"), host, settings.processor.health_port),
        Program("projector", (python, "-m", "regions.projector"), host, settings.projector.health_port),
        Program("audit", (python, "-m", "regions.audit"), host, settings.audit.health_port),
        Program("lifecycle", (python, "-m", "regions.lifecycle"), host, settings.lifecycle.health_port),
        Program("intake", (python, "-m", "regions.intake"), host, settings.intake.port),
        Program("gateway", (python, "-m", "gateway"), settings.gateway.host, settings.gateway.port),
        *replicator_programs(settings),
    ]


def replicator_programs(settings: Settings) -> list[Program]:
    """One replicator per other region of the deployment. The one copying from the i-th region of
    ``settings.regions`` listens on ``replicator.health_port + i`` (as ``ops/services env`` says)."""
    python, host, order = sys.executable, settings.intake.host, list(settings.regions)
    programs = []
    for source in settings.remote_regions():
        port = settings.replicator.health_port + order.index(source)
        env = (("LB_REPLICATOR__SOURCE_REGION", source), ("LB_REPLICATOR__HEALTH_PORT", str(port)))
        programs.append(Program(f"replicator-from-{source}", (python, "-m", "replicator"), host, port, env))
    return programs


def port_taken(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: TIME_WAIT is no owner
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def port_owner(port: int) -> str | None:
    """'pid N: command' of the process listening on ``port``, when ``ss`` can tell."""
    try:
        listing = subprocess.run(
            ["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"pid=(\d+)", listing)
    if found is None:
        return None
    pid = found.group(1)
    try:
        argv = [
            a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a
        ]
    except OSError:
        argv = []
    command = " ".join([Path(argv[0]).name, *argv[1:]]) if argv else "unknown command"
    return f"pid {pid}: {command[:120]}"


def taken_ports(programs: list[Program]) -> list[str]:
    """One line per port that is taken: the port, the program that needs it, and its holder."""
    return [
        f"  {p.port} ({p.name}): held by {port_owner(p.port) or 'a process this user cannot see'}"
        for p in programs
        if p.host is not None and p.port is not None and port_taken(p.host, p.port)
    ]


class CrashLoop(Exception):
    def __init__(self, program: Program, crashes: int, status: str) -> None:
        super().__init__(f"{program.name} {status}")
        self.program, self.crashes, self.status = program, crashes, status


def _status(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


@dataclass
class Supervisor:
    programs: list[Program]
    logs: Path
    policy: CrashPolicy = field(default_factory=CrashPolicy)
    say: Callable[[str], None] = lambda text: print(text, flush=True)
    clock: Callable[[], float] = time.monotonic
    running: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def log_of(self, program: Program) -> Path:
        return self.logs / f"{program.name}.log"

    async def _start(self, program: Program) -> asyncio.subprocess.Process:
        with self.log_of(program).open("ab") as log:
            # A session of its own: Ctrl-C reaches the supervisor only, which stops everyone in order.
            return await asyncio.create_subprocess_exec(
                *program.argv,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env={**os.environ, **dict(program.env)},
            )

    async def _keep(self, program: Program) -> None:
        """Run ``program`` until the supervisor stops; raises ``CrashLoop`` when restarting is futile."""
        crashes: tuple[float, ...] = ()
        while not self._stopping.is_set():
            process = self.running[program.name] = await self._start(program)
            announce = asyncio.create_task(self._announce_ready(program, again=bool(crashes)))
            code = await process.wait()
            announce.cancel()
            if self._stopping.is_set():
                return
            crashes, decision = after_crash(self.policy, crashes, self.clock())
            if isinstance(decision, GiveUp):
                raise CrashLoop(program, decision.crashes, _status(code))
            note = f"{program.name} {_status(code)}; restarting it in {decision.delay_s:.0f} s"
            self.say(f"{note} ({decision.crashes} of {self.policy.describe()} end the run)")
            with self.log_of(program).open("a") as log:
                log.write(f"---- ops/run: {note}\n")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), decision.delay_s)

    async def _announce_ready(self, program: Program, again: bool) -> None:
        if program.host is None or program.port is None:
            return
        async with httpx.AsyncClient(timeout=2) as http:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"http://{program.host}:{program.port}/readyz")).status_code == 200:
                        self.say(f"{program.name} is ready{' again' if again else ''}")
                        return
                await asyncio.sleep(0.5)

    async def stop(self) -> None:
        """Ask every process to stop (SIGTERM); SIGKILL what is still there after 20 s."""
        self._stopping.set()
        alive = [p for p in self.running.values() if p.returncode is None]
        for process in alive:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        for process in alive:
            try:
                await asyncio.wait_for(process.wait(), 20)
            except TimeoutError:
                process.kill()
                await process.wait()

    async def run(self, stop: asyncio.Event) -> int:
        """Supervise until ``stop`` is set (0) or a process crash-loops (1)."""
        keepers = [asyncio.create_task(self._keep(p)) for p in self.programs]
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([*keepers, stopped], return_when=asyncio.FIRST_COMPLETED)
        await self.stop()  # the other keepers then return by themselves
        stopped.cancel()
        results = await asyncio.gather(*keepers, stopped, return_exceptions=True)
        errors = [r for r in results if isinstance(r, Exception)]
        unexpected = [e for e in errors if not isinstance(e, CrashLoop)]
        if unexpected:
            raise unexpected[0]
        if errors:
            self._explain(errors[0])
            return 1
        return 0

    def _explain(self, loop: Exception) -> None:
        if not isinstance(loop, CrashLoop):
            raise loop
        log = self.log_of(loop.program)
        tail = log.read_text(errors="replace").splitlines()[-25:] if log.exists() else []
        self.say("\n".join([
            f"error: {loop.program.name} {loop.status}, its exit number {loop.crashes} within "
            f"{self.policy.window_s:.0f} s: a crash loop, so the region stops (rule: {self.policy.describe()} "
            "end the run).",
            f"Last lines of {log}:", *(f"  | {line}" for line in tail),
            "What to do: read the log above for the cause (a port in use, a server down: see "
            "'ops/services status', a setting refused), fix it, then start again with 'ops/run'.",
        ]))  # fmt: skip


def _taken_message(taken: list[str], pid_file: Path | None) -> str:
    lines = ["error: the region cannot start: ports it needs are taken (nothing was started)", *taken]
    other = pid_file.read_text().strip() if pid_file is not None and pid_file.exists() else ""
    if other.isdigit() and Path(f"/proc/{other}").exists():
        lines.append(
            f"Another ops/run (pid {other}) is running this region: stop it (Ctrl-C in its terminal)."
        )
    lines.append(
        "Stop what holds them, or give this region other ports (LB_INTAKE__PORT, LB_GATEWAY__PORT, "
        "LB_PROCESSOR__HEALTH_PORT, LB_PROJECTOR__HEALTH_PORT, LB_AUDIT__HEALTH_PORT)."
    )
    return "\n".join(lines)


async def _supervise(supervisor: Supervisor) -> int:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    return await supervisor.run(stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="regions.runtime.supervisor", description=__doc__)
    parser.add_argument("--check-ports", action="store_true", help="only check that the ports are free")
    parser.add_argument("--logs", type=Path, default=Path(".data/logs"), help="folder of the process logs")
    parser.add_argument("--pid-file", type=Path, help="where this run writes its pid (another run reads it)")
    parser.add_argument(
        "--label", default="", help="put before every line it says (the region, with several)"
    )
    args = parser.parse_args(argv)
    try:
        programs = region_programs(load_settings())
    except (UnknownSettingsError, ValueError) as exc:
        print(f"error: settings refused: {describe_refusal(exc)}", file=sys.stderr)
        return 2
    taken = taken_ports(programs)
    if taken:
        label = f"[{args.label}] " if args.label else ""
        print(label + _taken_message(taken, args.pid_file), file=sys.stderr)
        return 1
    if args.check_ports:
        return 0
    args.logs.mkdir(parents=True, exist_ok=True)
    if args.pid_file is not None:
        args.pid_file.write_text(f"{os.getpid()}\n")
    try:
        prefix = f"[{args.label}] " if args.label else ""
        supervisor = Supervisor(programs, args.logs, say=lambda text: print(prefix + text, flush=True))
        return asyncio.run(_supervise(supervisor))
    finally:
        if args.pid_file is not None:
            args.pid_file.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
