"""GraphiQL, when on, works in a browser with no network: every file it loads is the gateway's own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.e2e.gateway.conftest import JS, node, start_gateway
from tests.harness import Region


async def test_graphiql_runs_a_query_with_nothing_loaded_off_loopback(region: Region, tmp_path: Path) -> None:
    async with start_gateway(region.env, tmp_path / "gateway.log", LB_GATEWAY__GRAPHIQL="true") as gw:
        browser = await asyncio.create_subprocess_exec(
            node(), str(JS / "graphiql_page.mjs"), gw.url, "{ __typename }",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(browser.communicate(), 90)

    assert browser.returncode == 0, (out.decode()[-2000:], err.decode()[-2000:])
    seen = json.loads(out.decode().splitlines()[-1])
    assert seen["offLoopback"] == [] and seen["failed"] == [], seen
    assert '"__typename": "Query"' in seen["response"], seen
