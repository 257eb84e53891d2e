"""Several gateway processes on one port (SO_REUSEPORT): each answers queries, and a stop ends all."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from pathlib import Path

import httpx
from cassandra.cluster import Session

from regions.runtime.settings import Settings
from tests.harness import free_port, region_env, terminate, wait_ready

QUERY = "{ __typename }"


def children(pid: int) -> set[int]:
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def running(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def test_every_process_of_a_multi_process_gateway_answers(
    settings: Settings, cassandra_session: Session, tmp_path: Path
) -> None:
    """``cassandra_session``: the test's keyspace, made before the gateway connects."""
    port = free_port()
    env = {**os.environ, **region_env(settings), "LB_GATEWAY__PORT": str(port), "LB_GATEWAY__WORKERS": "2"}
    log = tmp_path / "gateway.log"
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_ready("gateway", url, process, log.read_text, path="/healthz")
        workers = children(process.pid)
        persisted = {
            "persistedQuery": {"version": 1, "sha256Hash": hashlib.sha256(QUERY.encode()).hexdigest()}
        }
        answered: set[int] = set()
        for _ in range(200):  # a new connection each time: the kernel picks a process per connection
            if answered == workers:
                break
            async with httpx.AsyncClient(base_url=url, timeout=10) as http:
                pid = (await http.get("/healthz")).json()["pid"]  # the same connection serves the query
                body = {"query": QUERY, "extensions": persisted}
                response = await http.post("/graphql", json=body)
                assert response.json()["data"] == {"__typename": "Query"}
                answered.add(pid)

        assert len(workers) == 2
        assert answered == workers
    finally:
        await terminate(process)
    assert process.returncode == 0
    assert not any(running(pid) for pid in workers)
    assert "Traceback" not in log.read_text()
