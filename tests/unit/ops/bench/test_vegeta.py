"""vegeta's targets: written when its context is entered (before a benchmark's clocks start), signed,
and removed when it is left."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import msgspec
import pytest

from ops.bench.load import Results, Schedule
from ops.bench.vegeta import Vegeta
from regions.core.signing import verify


def _schedule(batch: int) -> Schedule:
    return Schedule(port=8080, board="b1", rate=100, batch=batch, duration=2, players=10, max_connections=4)


@pytest.mark.parametrize("batch", [1, 10])
def test_entering_writes_every_request_signed_and_leaving_removes_them(batch: int) -> None:
    async def scenario() -> Path:
        async with Vegeta(_schedule(batch)) as vegeta:
            targets = vegeta._path("targets.json")
            lines = targets.read_bytes().splitlines()
            assert len(lines) == 200 // batch  # rate 100 for 2 s, ``batch`` awards a request
            for line in lines:
                target = msgspec.json.decode(line)
                assert target["url"] == "http://127.0.0.1:8080/internal/awards"
                body = base64.b64decode(target["body"])
                h = target["header"]
                key = verify(h["X-Award-Key-Id"][0], h["X-Award-Timestamp"][0], h["X-Award-Signature"][0],
                             body, {"dev": "dev-secret"}, int(time.time()), 300)  # fmt: skip
                assert key == "dev"
                awards = msgspec.json.decode(body)
                assert len([awards] if batch == 1 else awards["awards"]) == batch
            return targets

    assert not asyncio.run(scenario()).exists()


def test_attacking_or_collecting_outside_the_context_says_how_to_use_it() -> None:
    vegeta = Vegeta(_schedule(1))
    with pytest.raises(RuntimeError, match="async context"):
        asyncio.run(vegeta.attack())
    with pytest.raises(RuntimeError, match="async context"):
        asyncio.run(vegeta.collect(Results()))
