"""No secret reaches what the operator's CLI prints or what the services log.

Every secret setting is given a recognisable value (an award key, the admin token, the Kafka SASL
password, the Cassandra password, the Redis password inside ``LB_REDIS__URL``); then real CLI
commands run and real services start, on the paths that print a URL or a setting: success, a store
that refuses the credentials, a URL the platform refuses, settings production mode refuses. Their
stdout, stderr and logs are scanned for every secret value (and its URL-encoded form): zero hits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

import httpx
from cassandra.cluster import Session

from regions.runtime.settings import Settings
from tests.harness import free_port, region_env, terminate

AWARD_SECRET = "award-secret-7f3a91"
ADMIN_TOKEN = "admin-token-9c1e55"
KAFKA_PASSWORD = "kafka-password-2b8d07"
CASSANDRA_PASSWORD = "cassandra-password-5e4f13"
REDIS_PASSWORD = "redis-password/6a0c42"  # a '/' is URL-encoded in the URL: both forms must not show
SECRETS = (AWARD_SECRET, ADMIN_TOKEN, KAFKA_PASSWORD, CASSANDRA_PASSWORD, REDIS_PASSWORD)


def _env(settings: Settings, **overrides: str) -> dict[str, str]:
    """The machine's environment without LB_*, these settings, every secret set, then ``overrides``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LB_")}
    secrets = {
        "LB_INTAKE__AWARD_KEYS": json.dumps({"studio": AWARD_SECRET}),
        "LB_GATEWAY__ADMIN_TOKEN": ADMIN_TOKEN,
        "LB_KAFKA__SASL_USERNAME": "lb",
        "LB_KAFKA__SASL_PASSWORD": KAFKA_PASSWORD,
        "LB_CASSANDRA__USERNAME": "lb",
        "LB_CASSANDRA__PASSWORD": CASSANDRA_PASSWORD,
        "LB_REDIS__URL": settings.redis.url.replace("://", f"://:{quote(REDIS_PASSWORD, safe='')}@", 1),
        "LB_INTAKE__PORT": str(free_port()),  # nothing listens there
        "LB_GATEWAY__PORT": str(free_port()),
    }
    return {**clean, **region_env(settings), **secrets, **overrides}


def _leaks(text: str) -> list[str]:
    forms = {form for secret in SECRETS for form in (secret, quote(secret, safe=""))}
    return sorted(form for form in forms if form in text)


async def _cli(env: dict[str, str], *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "regions.cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    return f"$ lb {' '.join(args)} (exit {process.returncode})\n{out.decode(errors='replace')}"


async def _service(env: dict[str, str], module: str, log: Path, seconds: float, poke: str = "") -> str:
    """Run ``python -m module`` for ``seconds`` (or until it exits), optionally GETting ``poke``
    meanwhile; its whole log."""
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, env=env, stdout=out, stderr=asyncio.subprocess.STDOUT
        )
    try:
        deadline = asyncio.get_running_loop().time() + seconds
        while process.returncode is None and asyncio.get_running_loop().time() < deadline:
            if poke:
                async with httpx.AsyncClient(timeout=2) as http:
                    with contextlib.suppress(httpx.HTTPError):
                        await http.post(poke, json={"query": "{ leaderboards { id } }"},
                                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}x"})  # fmt: skip
            await asyncio.sleep(0.5)
    finally:
        await terminate(process)
    text = await asyncio.to_thread(log.read_text, errors="replace")
    return f"$ python -m {module} (exit {process.returncode})\n{text}"


async def test_no_secret_is_printed_by_the_cli_or_logged_by_the_services(
    topics: Settings, cassandra_session: Session, tmp_path: Path
) -> None:
    env = _env(topics)
    bad_url = env["LB_REDIS__URL"].replace("redis", "rediz", 1)
    board = f"sec-{uuid.uuid4().hex[:8]}"
    production = {"LB_MODE": "production", "LB_PROCESSOR__HONOUR_CUTOFFS": "false"}
    gateway_port = env["LB_GATEWAY__PORT"]
    outputs = [
        await _cli(env, "create-board", board),
        await _cli(env, "boards"),
        await _cli(env, "rebuild", "--board", board),  # Redis refuses the password: it has none set
        await _cli({**env, "LB_REDIS__URL": bad_url}, "rebuild", "--board", board),
        await _cli(env, "award", board, "alice", "5", "--key-id", "studio"),  # no intake there
        await _cli({**env, **production}, "boards"),
        await _service(env, "regions.projector", tmp_path / "projector.log", 6),
        await _service({**env, "LB_REDIS__URL": bad_url}, "gateway", tmp_path / "gateway-bad-url.log", 10),
        await _service({**env, **production}, "regions.processor", tmp_path / "processor.log", 10),
        await _service(
            env, "gateway", tmp_path / "gateway.log", 8, poke=f"http://127.0.0.1:{gateway_port}/graphql"
        ),
    ]
    everything = "\n".join(outputs)

    assert _leaks(everything) == [], everything
    # The paths that print a URL or a setting were taken: they show it, masked.
    assert "rediz://:***@" in outputs[3] and "rediz://:***@" in outputs[7], everything
    assert "settings refused" in outputs[5] and "LB_PROCESSOR__HONOUR_CUTOFFS" in outputs[5], outputs[5]
    assert "settings are refused" in outputs[8], outputs[8]
    assert "not reachable" in outputs[4], outputs[4]
