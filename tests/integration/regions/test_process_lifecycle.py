"""Starting and stopping a region's processes: a refused setting stops the start with the reason, and
a clean stop leaves no traceback."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from tests.harness import SERVICES, Region


async def test_every_region_process_stops_cleanly_on_sigterm(region: Region) -> None:
    stopped = {}
    for service in SERVICES:
        process = region.processes[service]
        await region.stop(service)
        stopped[service] = process.returncode

    # Workers return from their loop; the intake's web server re-raises SIGTERM once it has shut down.
    assert stopped == dict.fromkeys(SERVICES, 0) | {"intake": -signal.SIGTERM}
    for service in SERVICES:
        log = region.tail(service, 10_000)
        assert "Traceback" not in log and "CancelledError" not in log, f"{service}:\n{log}"


@pytest.mark.parametrize("service", ["processor", "audit", "intake"])
async def test_a_misspelt_setting_stops_the_start_with_the_likely_name(service: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", f"regions.{service}", env={**os.environ, "LB_KAFKA__PARTITONS": "3"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await process.communicate())[0].decode()

    assert process.returncode == 2
    assert "LB_KAFKA__PARTITONS (did you mean LB_KAFKA__PARTITIONS?)" in output
    assert "Traceback" not in output
