"""The gateway's HTTP endpoint as the GraphQL over HTTP specification says, checked by the
specification's own audit suite (npm ``graphql-http``, ``serverAudits``) against the running process."""

from __future__ import annotations

import asyncio
import json

from tests.e2e.gateway.conftest import JS, GatewayProcess, node


async def test_graphql_over_http_audit_passes_without_errors_or_warnings(gateway_process: GatewayProcess) -> None:
    audit = await asyncio.create_subprocess_exec(
        node(), str(JS / "http_audit.mjs"), gateway_process.url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(audit.communicate(), 120)
    assert audit.returncode == 0, err.decode()
    results = [json.loads(line) for line in out.decode().splitlines()]
    assert len(results) > 50, out.decode()  # the suite ran (61 audits in graphql-http 1.23)
    failed = [f"{r['status']} {r['id']} {r['name']}: {r['reason']}" for r in results if r["status"] != "ok"]
    assert not failed, "\n".join(failed)
