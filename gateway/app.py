"""The gateway's ASGI app: /graphql (HTTP and WebSocket), /live, /healthz, /readyz and /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import msgspec
from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.types import ExecutionResult

from gateway import metrics
from gateway.admission import Admission
from gateway.api import build_schema
from gateway.api.context import Context
from gateway.api.cost import cost_model
from gateway.api.plans import Declined, Plans, run_plan
from gateway.body_limit import BodyLimit
from gateway.core.admission import is_mutation
from gateway.core.answers import Answer, AnswerCache, Flight, Flights
from gateway.core.media import GRAPHQL_RESPONSE, JSON, is_request_error, response_media_type
from gateway.core.persisted import (
    NOT_FOUND_CODE,
    NOT_FOUND_MESSAGE,
    Document,
    NotFound,
    PersistedDocuments,
    Refused,
)
from gateway.operations import read_operation
from gateway.services import Services
from gateway.wiring import open_services
from regions.runtime.health import Health, health_routes
from regions.runtime.settings import Settings

STATIC = Path(__file__).parent / "static"
GRAPHIQL = Path(__file__).parent / "graphiql" / "assets"  # installed by ops/graphiql (ensure_graphiql)
GRAPHIQL_FILES = ("graphiql.min.js", "graphiql.min.css", "react.production.min.js", "react-dom.production.min.js")


def graphiql_problem(settings: Settings) -> str | None:
    """Why the gateway cannot serve GraphiQL as set, or None (it is off, or its files are there)."""
    missing = [name for name in GRAPHIQL_FILES if not (GRAPHIQL / name).is_file()]
    if not settings.gateway.graphiql or not missing:
        return None
    return (
        f"GraphiQL is on (gateway.graphiql) but {', '.join(missing)} are not in {GRAPHIQL}: run "
        "ops/graphiql to install them (or turn GraphiQL off)"
    )
OpenServices = Callable[[Settings], contextlib.AbstractAsyncContextManager[Services]]


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    """The legacy ``graphql-ws`` protocol with the same connection-init timeout as
    ``graphql-transport-ws``: a socket that never initialises is closed with 4408 instead of being
    held open for ever."""

    async def handle(self) -> None:
        watchdog = asyncio.create_task(self._close_unless_initialised())
        try:
            await super().handle()
        finally:
            watchdog.cancel()

    async def _close_unless_initialised(self) -> None:
        await asyncio.sleep(self.view.connection_init_wait_timeout.total_seconds())
        if not self.connection_acknowledged:
            await self.websocket.close(code=4408, reason="Connection initialisation timeout")


class PersistedQueryError(Exception):
    def __init__(self, resolved: NotFound | Refused) -> None:
        super().__init__(resolved)
        self.resolved = resolved


class GraphQLView(GraphQL[Context, None]):
    """Strawberry's ASGI view with this gateway's context (one DataLoader per request), a
    short-lived cache of whole answers to identical board reads (see :mod:`gateway.core.answers`),
    automatic persisted queries (:mod:`gateway.core.persisted`) and compiled plans of documents it
    answered before (:mod:`gateway.api.plans`)."""

    graphql_ws_handler_class = LegacyWSHandler

    def __init__(self, settings: Settings) -> None:
        gw = settings.gateway
        schema = build_schema(settings)
        self._graphql_schema = schema._schema
        super().__init__(
            schema,
            graphql_ide="graphiql" if gw.graphiql else None,
            keep_alive=True,
            keep_alive_interval=15,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL),
            connection_init_wait_timeout=timedelta(seconds=gw.connection_init_timeout_s),
            max_subscriptions_per_connection=gw.max_subscriptions_per_connection,
            allowed_origins=gw.allowed_origins,
        )
        self._answers = AnswerCache(gw.top_cache_ttl_s, gw.answer_cache_bytes)
        self._flights = Flights()
        self._persisted = PersistedDocuments(gw.persisted_query_entries)
        self._plans = (
            Plans(self._graphql_schema, cost_model(gw), gw.max_query_cost) if gw.planned_reads else None
        )

    def create_response(
        self, response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse], sub_response: Response
    ) -> Response:
        """Strawberry's HTTP answer, encoded by msgspec (WebSocket messages keep strawberry's text), as
        the media type the client asked for (``get_sub_response``); a request error answered as
        ``application/graphql-response+json`` has no ``data`` entry (``execute_single``)."""
        media_type = sub_response.media_type or JSON
        if media_type == GRAPHQL_RESPONSE and sub_response.status_code == 400 and isinstance(response_data, dict):
            response_data = cast(GraphQLHTTPResponse, {k: v for k, v in response_data.items() if k != "data"})
        response = Response(msgspec.json.encode(response_data), media_type=media_type)
        response.headers.raw.extend(sub_response.headers.raw)
        response.background = sub_response.background or response.background
        if sub_response.status_code:
            response.status_code = sub_response.status_code
        return response

    @property
    def graphql_ide_html(self) -> str:
        """The GraphiQL page, on files this gateway serves (``/graphiql``), never a CDN's."""
        return (STATIC / "graphiql.html").read_text()

    def should_render_graphql_ide(self, request: Any) -> bool:
        return super().should_render_graphql_ide(request) and "extensions" not in request.query_params

    async def execute_single(
        self,
        request: Request,
        request_adapter: Any,
        sub_response: Response,
        context: Context,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        """Runs the persisted document a request names (see :mod:`gateway.core.persisted`). Answered
        as ``application/graphql-response+json``, a request error is a 400 (the specification's code)."""
        resolved = self._persisted.resolve(request_data.query, request_data.extensions)
        if not isinstance(resolved, Document):
            raise PersistedQueryError(resolved)
        request_data.query = resolved.query
        request.state.graphql_operation = (resolved.query, request_data.operation_name)
        result = await super().execute_single(
            request, request_adapter, sub_response, context, root_value, request_data
        )
        paths = [error.path for error in result.errors or []]
        if sub_response.media_type == GRAPHQL_RESPONSE and is_request_error(result.data, paths):
            sub_response.status_code = 400
        return result

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        """Strawberry's, with the media type of the answer (``gateway.core.media``)."""
        sub_response = await super().get_sub_response(request)
        sub_response.media_type = response_media_type(request.headers.get("accept"))
        return sub_response

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        services: Services = request.app.state.services
        websocket = isinstance(request, WebSocket)
        context = Context(services, request, response, services.profiles.loader(cache=not websocket))
        request.state.graphql_context = context
        return context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            return await super().__call__(scope, receive, send)
        request = Request(scope, receive)
        key = await self._answer_key(request)
        body, flight = (None, None) if key is None else await self._reused(request, key)
        if body is not None:
            media_type = response_media_type(request.headers.get("accept"))
            response: Response = Response(body, media_type=media_type)
        else:
            try:
                response = await self._admitted(request, key)
            finally:
                if key is not None and flight is not None:
                    self._flights.land(key, flight, getattr(request.state, "answer", None))
        await response(scope, receive, send)

    async def _reused(self, request: Request, key: bytes) -> tuple[bytes | None, Flight | None]:
        """The body of an identical read's answer (from the cache; while the identical request that
        reads it again is answered, the expired one or, without it, that request's answer once it
        is), else None and the flight this request leads, if it leads one (see
        :mod:`gateway.core.answers`)."""
        generation, now = request.app.state.services.projections.generation, time.monotonic()
        cached = self._answers.get(key, now, generation)
        if cached is not None:
            metrics.ANSWER_CACHE.labels("hit").inc()
            return cached, None
        if (flying := self._flights.flying(key)) is not None:
            if (stale := self._answers.stale(key, now, generation)) is not None:
                metrics.ANSWER_CACHE.labels("stale").inc()
                return stale, None
            answer = await asyncio.shield(flying)
            if answer is not None and answer.current(generation):
                metrics.ANSWER_CACHE.labels("shared").inc()
                return answer.body, None
        metrics.ANSWER_CACHE.labels("miss").inc()
        return None, self._flights.lead(key)

    async def _admitted(self, request: Request, key: bytes | None) -> Response:
        """The answer of an operation admitted under the bound of operations in flight
        (:mod:`gateway.admission`), else 503 OVERLOADED before anything runs."""
        admission: Admission = request.app.state.services.admission
        if not admission.enter(mutation=False):
            if "authorization" not in request.headers or not await self._is_mutation(request):
                return _overloaded(request, admission)
            if not admission.enter(mutation=True):
                return _overloaded(request, admission)
        try:
            return await self._answer(request, key)
        finally:
            admission.leave()

    async def _is_mutation(self, request: Request) -> bool:
        """Whether the request runs a mutation (asked only once queries are refused: an admin's
        request, which names a token, may use the share kept for durable writes)."""
        body = await request.body() if request.method == "POST" else b""
        operation = read_operation(request.method, request.query_params, request.headers, body)
        if operation is None:
            return False
        resolved = self._persisted.resolve(operation.query, operation.extensions)
        return isinstance(resolved, Document) and is_mutation(resolved.query, operation.operation_name)

    async def _answer_key(self, request: Request) -> bytes | None:
        """What identifies a reusable answer to the request; None: the request's answer is its own
        (answers are not reused at all, or it names credentials)."""
        if self._answers.ttl_s <= 0 or "authorization" in request.headers:
            return None
        if request.method == "GET":
            named = "query=" in request.url.query or "extensions=" in request.url.query
            return b"GET " + request.url.query.encode() if named else None
        return b"POST " + await request.body()

    async def _answer(self, request: Request, key: bytes | None) -> Response:
        started = time.monotonic()
        try:
            response = await self._planned(request) or await self._generic(request)
        except HTTPException as exc:
            return PlainTextResponse(exc.reason, status_code=exc.status_code)
        except PersistedQueryError as exc:
            return self._persisted_error(exc.resolved)
        context: Context | None = getattr(request.state, "graphql_context", None)
        if key is None or context is None or not context.cacheable or not context.boards_read:
            return response
        if response.status_code == 200 and b'"errors"' not in response.body:
            request.state.answer = answer = Answer(started, dict(context.boards_read), bytes(response.body))
            self._answers.put(key, answer)
            metrics.ANSWER_CACHE.labels("stored").inc()
            metrics.ANSWER_CACHE_BYTES.set(self._answers.bytes)
        return response

    async def _generic(self, request: Request) -> Response:
        """Strawberry's own execution; a document it answers without an error gets a plan."""
        response = await self.run(request)
        ran = getattr(request.state, "graphql_operation", None)
        answered = response.status_code == 200 and b'"errors"' not in response.body
        if self._plans is not None and ran is not None and ran[0] is not None and answered:
            self._plans.learn(*ran)
        return response

    async def _planned(self, request: Request) -> Response | None:
        """The answer of a known document's plan; None when the generic executor must answer."""
        if self._plans is None:
            return None
        body = await request.body() if request.method == "POST" else b""
        operation = read_operation(request.method, request.query_params, request.headers, body)
        if operation is None:
            return None
        resolved = self._persisted.resolve(operation.query, operation.extensions)
        if not isinstance(resolved, Document):
            raise PersistedQueryError(resolved)
        plan = None if resolved.query is None else self._plans.get(resolved.query, operation.operation_name)
        if plan is None:
            return None
        sub_response = await self.get_sub_response(request)
        context = await self.get_context(request, sub_response)
        try:
            data = await run_plan(self._graphql_schema, plan, context, operation.variables)
        except Declined:
            metrics.PLANNED.labels("declined").inc()
            request.state.graphql_context = None
            return None
        metrics.PLANNED.labels("answered").inc()
        return self.create_response(cast(GraphQLHTTPResponse, data), sub_response)

    def _persisted_error(self, resolved: NotFound | Refused) -> Response:
        """Apollo's answers: an unknown hash is a 200 the client retries with the document."""
        if isinstance(resolved, NotFound):
            error = {"message": NOT_FOUND_MESSAGE, "extensions": {"code": NOT_FOUND_CODE}}
            return Response(msgspec.json.encode({"errors": [error]}), 200, media_type="application/json")
        error = {"message": resolved.message, "extensions": {"code": "BAD_USER_INPUT"}}
        return Response(msgspec.json.encode({"errors": [error]}), 400, media_type="application/json")


def _overloaded(request: Request, admission: Admission) -> Response:
    metrics.REFUSED.labels("overloaded").inc()
    limit = admission.bounds.operations.limit
    why = (
        f"runs as many operations as it may (gateway.max_concurrent_operations = {limit})"
        if admission.behind_ms is None
        else f"is {admission.behind_ms:.0f} ms behind its work (gateway.max_loop_behind_ms = {admission.max_behind_ms:g})"
    )
    error = {
        "message": f"the gateway {why}; retry after Retry-After seconds",
        "extensions": {"code": "OVERLOADED"},
    }
    return Response(
        msgspec.json.encode({"errors": [error]}), 503, headers={"Retry-After": str(admission.retry_after_s)},
        media_type=response_media_type(request.headers.get("accept")),
    )  # fmt: skip


async def live_page(_: Request) -> Response:
    return FileResponse(STATIC / "live.html", headers={"Cache-Control": "no-cache"})


def watch_readiness(health: Health, services: Services) -> None:
    """``/readyz``: ready once the hints feed is subscribed (Redis) and the board catalog was reached
    once (Cassandra). A later Cassandra outage keeps the gateway ready, since Redis reads of cached
    boards still answer, and shows in ``stores``: ``cassandra`` is up, down or connecting, and
    ``profiles`` is the profile breaker's state (open: profiles are skipped)."""
    health.checks["hints_feed"] = lambda: services.hub.connected
    health.checks["board_catalog"] = services.cassandra.connected.is_set
    health.details["stores"] = lambda: {
        "cassandra": services.cassandra.state().value,
        "profiles": services.profiles.breaker.state(time.monotonic()).value,
    }


def create_app(settings: Settings, open_with: OpenServices = open_services) -> Starlette:
    """The app; its lifespan opens Redis, Cassandra and the hints feed, and closes them after.
    RuntimeError when GraphiQL is on without its files (``graphiql_problem``)."""
    problem = graphiql_problem(settings)
    if problem is not None:
        raise RuntimeError(problem)
    view = GraphQLView(settings)
    health = Health("gateway")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with open_with(settings) as services:
            app.state.services = services
            watch_readiness(health, services)
            yield {}

    gw = settings.gateway
    return Starlette(
        routes=[
            Route("/graphql", view, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", view),
            Route("/live", live_page),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
            *([Mount("/graphiql", StaticFiles(directory=GRAPHIQL), name="graphiql")] if gw.graphiql else []),
            *health_routes(health),
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=gw.allowed_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type"],
                max_age=600,
            ),
            Middleware(BodyLimit, max_bytes=gw.max_body_bytes),
        ],
        lifespan=lifespan,
    )
