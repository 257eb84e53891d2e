"""ops/run's supervisor on small stand-in commands: restarts with backoff, ends on a crash loop with
the log tail, stops everything on request, and refuses to start when a port is taken."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from regions.core.supervision import CrashPolicy
from regions.runtime.supervisor import Program, Supervisor, taken_ports
from tests.harness import free_port

QUICK = CrashPolicy(max_crashes=3, window_s=60, first_delay_s=0.01, max_delay_s=0.05)


def _python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


async def _wait_for(predicate: Callable[[], bool], what: str) -> None:
    for _ in range(600):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(what)


async def test_a_crash_loop_ends_the_run_with_the_log_tail_and_the_rule(tmp_path: Path) -> None:
    said: list[str] = []
    crashing = Program("worker", _python("import sys; print('cannot bind 8081', flush=True); sys.exit(3)"))
    steady = Program("steady", _python("import time; time.sleep(600)"))
    supervisor = Supervisor([crashing, steady], tmp_path, QUICK, said.append)

    status = await supervisor.run(asyncio.Event())

    assert status == 1
    restarts = [s for s in said if s.startswith("worker exited with status 3; restarting it in")]
    assert len(restarts) == 2 and all("of 3 exits within 60 s end the run" in s for s in restarts)
    explanation = said[-1]
    assert explanation.startswith("error: worker exited with status 3, its exit number 3 within 60 s")
    assert "  | cannot bind 8081" in explanation and "What to do:" in explanation
    assert supervisor.running["steady"].returncode is not None  # the others were stopped too


async def test_a_crashed_process_is_restarted_and_everything_stops_on_request(tmp_path: Path) -> None:
    said: list[str] = []
    starts = tmp_path / "starts"
    # Exits at its first two starts, then keeps running.
    flaky = Program("flaky", _python(
        f"import pathlib, sys, time; p = pathlib.Path({str(starts)!r}); "
        "n = len(p.read_text()) if p.exists() else 0; p.write_text('x' * (n + 1)); "
        "sys.exit(1) if n < 2 else time.sleep(600)"
    ))  # fmt: skip
    supervisor = Supervisor([flaky], tmp_path, QUICK, said.append)
    stop = asyncio.Event()
    running = asyncio.create_task(supervisor.run(stop))

    await _wait_for(lambda: starts.exists() and len(starts.read_text()) == 3, "the third start")
    process = supervisor.running["flaky"]
    stop.set()

    assert await running == 0
    assert process.returncode is not None and process.returncode < 0  # stopped by SIGTERM
    assert [s.split(";")[0] for s in said] == ["flaky exited with status 1"] * 2
    assert (tmp_path / "flaky.log").read_text().count("---- ops/run: flaky exited with status 1") == 2


def test_taken_ports_name_the_port_its_program_and_the_holder() -> None:
    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        taken = taken_ports([Program("intake", ("unused",), "127.0.0.1", port),
                             Program("gateway", ("unused",), "127.0.0.1", free_port())])  # fmt: skip

    assert len(taken) == 1 and taken[0].startswith(f"  {port} (intake): held by pid {os.getpid()}: python")


async def test_a_second_run_says_which_ports_are_taken_and_starts_nothing(tmp_path: Path) -> None:
    port = free_port()
    pid_file = tmp_path / "region.pid"
    pid_file.write_text(f"{os.getpid()}\n")  # as a running ops/run would have written it
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        second = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "regions.runtime.supervisor", "--logs", str(tmp_path), "--pid-file", str(pid_file),
            env={**os.environ, "LB_INTAKE__PORT": str(port)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await second.communicate()

    message = err.decode()
    assert second.returncode == 1
    assert message.startswith(
        "error: the region cannot start: ports it needs are taken (nothing was started)"
    )
    assert f"  {port} (intake): held by pid {os.getpid()}" in message
    assert f"Another ops/run (pid {os.getpid()}) is running this region" in message
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".log")]  # nothing was started
