"""``python -m gateway``: the GraphQL gateway of one region."""

from __future__ import annotations

import gc
import logging

import uvicorn

from gateway.app import create_app
from regions.settings import load_settings


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s gateway %(message)s")
    settings = load_settings()
    app = create_app(settings)
    gc.collect()
    gc.freeze()  # objects made at start-up stay out of every later collection
    uvicorn.run(
        app,
        host=settings.gateway.host,
        port=settings.gateway.port,
        loop="uvloop",
        http="httptools",
        ws="websockets-sansio",
        ws_ping_interval=20,
        ws_ping_timeout=20,
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
