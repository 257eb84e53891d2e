"""The gateway's ASGI app: /graphql (HTTP and WebSocket), /live, /healthz, /readyz and /metrics."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL

from gateway.api import build_schema
from gateway.api.context import Context
from gateway.services import Services
from gateway.wiring import open_services
from regions.health import Health, health_routes
from regions.settings import Settings

STATIC = Path(__file__).parent / "static"
OpenServices = Callable[[Settings], contextlib.AbstractAsyncContextManager[Services]]


class GraphQLView(GraphQL[Context, None]):
    """Strawberry's ASGI view with this gateway's context: one DataLoader per request."""

    def __init__(self, settings: Settings) -> None:
        gw = settings.gateway
        super().__init__(
            build_schema(gw),
            graphql_ide="graphiql" if gw.graphiql else None,
            keep_alive=True,
            keep_alive_interval=15,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL),
            connection_init_wait_timeout=timedelta(seconds=gw.connection_init_timeout_s),
            max_subscriptions_per_connection=gw.max_subscriptions_per_connection,
            allowed_origins=gw.allowed_origins,
        )

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        services: Services = request.app.state.services
        websocket = isinstance(request, WebSocket)
        return Context(services, request, response, services.profiles.loader(cache=not websocket))


async def live_page(_: Request) -> Response:
    return FileResponse(STATIC / "live.html", headers={"Cache-Control": "no-cache"})


def create_app(settings: Settings, open_with: OpenServices = open_services) -> Starlette:
    """The app; its lifespan opens Redis, Cassandra and the hints feed, and closes them after."""
    view = GraphQLView(settings)
    health = Health("gateway")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with open_with(settings) as services:
            app.state.services = services
            health.checks["hints_feed"] = lambda: services.hub.connected
            yield {}

    gw = settings.gateway
    return Starlette(
        routes=[
            Route("/graphql", view, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", view),
            Route("/live", live_page),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
            *health_routes(health),
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=gw.allowed_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type"],
                max_age=600,
            )
        ],
        lifespan=lifespan,
    )
