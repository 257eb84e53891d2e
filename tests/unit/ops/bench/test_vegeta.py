"""vegeta's targets: written when its context is entered (before a benchmark's clocks start), signed,
and removed when it is left."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import msgspec
import pytest

from ops.bench.load import Reply, Results, Schedule
from ops.bench.vegeta import Vegeta, _epoch, _reply, _Result
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


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-12-06T15:11:21.123456789Z", 1796569881.123456789),
        ("2026-12-06T16:11:21.5+01:00", 1796569881.5),
        ("2026-12-06T10:11:21-05:00", 1796569881.0),
        ("2026-12-06T15:11:21Z", 1796569881.0),  # a whole second: no fraction
    ],
)
def test_vegeta_timestamps_are_read_with_their_fraction_and_zone(stamp: str, expected: float) -> None:
    assert _epoch(stamp) == pytest.approx(expected, abs=1e-6)


def test_an_accepted_answer_names_its_last_award_and_a_refusal_names_nothing() -> None:
    body = {"accepted": [{"region": "eu", "partition": 0, "offset": 7, "applied": None},
                         {"region": "eu", "partition": 2, "offset": 9, "applied": {"total": 5}}]}  # fmt: skip
    accepted = _Result(seq=0, code=202, timestamp="", latency=0,
                       body=base64.b64encode(msgspec.json.encode(body)).decode())  # fmt: skip
    assert _reply(1.0, 1.5, 2.0, accepted) == Reply(1.0, 1.5, 2.0, 202, 2, "eu", 2, 9, 1)
    refused = _Result(seq=1, code=503, timestamp="", latency=0, body="")
    assert _reply(1.0, 1.0, 1.2, refused) == Reply(1.0, 1.0, 1.2, 503)


def test_a_timestamp_that_is_not_rfc_3339_is_named() -> None:
    with pytest.raises(ValueError, match="not RFC 3339: '15:11:21'"):
        _epoch("15:11:21")
