"""The gateway as its own process (``python -m gateway``) next to a region's real processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests import harness
from tests.harness import Region, free_port

JS = Path(__file__).resolve().parent.parent / "js"


@dataclass
class GatewayProcess:
    port: int
    process: asyncio.subprocess.Process
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.base + "/graphql"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    async def subscriptions(self) -> float:
        """The gateway's own count of active subscriptions (from /metrics)."""
        async with httpx.AsyncClient() as http:
            text = (await http.get(self.base + "/metrics")).text
        lines = [line for line in text.splitlines() if line.startswith("lb_gateway_subscriptions ")]
        return float(lines[0].split()[1]) if lines else 0.0

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")


@contextlib.asynccontextmanager
async def start_gateway(
    base_env: dict[str, str], log: Path, wait_ready: bool = True, **env: str
) -> AsyncIterator[GatewayProcess]:
    """``python -m gateway`` with the region's ``LB_*`` environment (``Region.env`` or ``region_env``)."""
    port = free_port()
    variables = {**os.environ, **base_env, "LB_GATEWAY__PORT": str(port), **env}
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", env=variables, stdout=out, stderr=out
        )
    gateway = GatewayProcess(port, process, log)
    try:
        if wait_ready:
            await harness.wait_ready("gateway", gateway.base, process, lambda: log.read_text()[-3000:])
        yield gateway
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                process.kill()
                await process.wait()


@pytest.fixture
async def gateway_process(region: Region, tmp_path: Path) -> AsyncIterator[GatewayProcess]:
    async with start_gateway(region.env, tmp_path / "gateway.log") as gateway:
        yield gateway


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node is not installed (Node.js 20 is needed for the JavaScript clients)")
    if not (JS / "node_modules").exists():
        raise RuntimeError("tests/e2e/js has no node_modules: run 'npm ci' there (ops/test does)")
    return found


async def wait_for(
    predicate: Callable[[], Awaitable[bool]], within: float = 20, what: str = "condition"
) -> None:
    await Region.wait_until(predicate, within, what)
