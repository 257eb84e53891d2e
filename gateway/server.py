"""How the gateway is served: uvicorn's settings, shared by ``python -m gateway`` and the tests."""

from __future__ import annotations

import uvicorn
from starlette.applications import Starlette

from regions.runtime.settings import Settings


def server_config(app: Starlette, settings: Settings) -> uvicorn.Config:
    """uvicorn's config for the gateway; a WebSocket message over ``gateway.max_ws_message_bytes``
    closes the connection (1009, message too big) before it is buffered."""
    gw = settings.gateway
    return uvicorn.Config(
        app,
        host=gw.host,
        port=gw.port,
        loop="uvloop",
        http="httptools",
        ws="websockets-sansio",
        ws_max_size=gw.max_ws_message_bytes,
        ws_ping_interval=20,
        ws_ping_timeout=20,
        timeout_graceful_shutdown=gw.shutdown_grace_s,
        access_log=False,
        log_level="warning",
    )
