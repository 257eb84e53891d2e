"""``python -m gateway``: the GraphQL gateway of one region."""

from __future__ import annotations

import contextlib
import gc
import logging
import socket

import uvicorn

from gateway.app import create_app, graphiql_problem
from gateway.server import server_config
from regions.runtime.reuseport import serve_processes
from regions.runtime.settings import Settings
from regions.runtime.worker import process_settings


def serve(settings: Settings, sock: socket.socket | None) -> None:
    app = create_app(settings)
    gc.collect()
    gc.freeze()  # objects made at start-up stay out of every later collection
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is a clean stop, as in uvicorn.run
        uvicorn.Server(server_config(app, settings)).run(sockets=None if sock is None else [sock])


def main() -> None:
    settings = process_settings("gateway")  # the platform's log format; refused settings exit 2
    problem = graphiql_problem(settings)
    if problem is not None:
        logging.getLogger("gateway").error("%s", problem)
        raise SystemExit(2)
    gw = settings.gateway
    serve_processes(gw.workers, gw.host, gw.port, lambda sock: serve(settings, sock))


if __name__ == "__main__":
    main()
