"""Award intake: ``POST /internal/awards``. Answers 202 only after Kafka acknowledged (acks=all).

Order of checks: room under the bound of awards in flight (``regions.intake.admission``: 503 overloaded
before anything is read), query parameters, content type, body size (reading stops at the cap), signature,
JSON, fields, room for this many awards, boards, erased players,
rate; then publish. With ``?wait=applied`` the answer also waits for this
region's projection (``regions.intake.waits``). Every rejection is JSON ``{"error": {"code", "message", "fields"}}``;
every 4xx names the field or header at fault, and a rejection leaves nothing behind.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import parse_qsl

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope

from regions.core.boards import Board, BoardStatus
from regions.core.periods import InvalidWindow, WindowSpec, closed_rule
from regions.core.rate_limit import TokenBuckets
from regions.core.signing import AUTH_HEADERS, HEADER_AT_FAULT, AuthFailure, Denied, verify
from regions.core.validation import (
    AwardInput,
    BatchTooLarge,
    FieldError,
    Invalid,
    Parsed,
    check_against_board,
    check_event_time,
    parse_request,
)
from regions.core.waits import AppliedWait, parse_wait
from regions.intake.admission import AwardAdmission
from regions.intake.asgi import AWARDS_PATH, Answer, IntakeApp, TooLarge, read_body
from regions.intake.openapi import document
from regions.intake.routing import AwardRouter, HomePublish, Publish
from regions.intake.waits import PendingWait, ProjectionWaits
from regions.runtime.erasure_list import ErasureList
from regions.runtime.health import Health, health_routes
from regions.runtime.logs import ThrottledLog
from regions.runtime.metrics import INTAKE_OVERLOADED, INTAKE_REQUESTS, INTAKE_SECONDS, count_accepted
from regions.runtime.settings import Settings
from regions.stores.cached_boards import BoardLookup, CachedBoards, CatalogUnavailable
from regions.stores.kafka.clients import AcceptanceUnavailable
from regions.stores.kafka.home import HomeUnavailable
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent

log = logging.getLogger(__name__)


class Rejection(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: tuple[FieldError, ...] = (),
        retry_after: float = 0,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.fields, self.retry_after = fields, retry_after

    def answer(self) -> Answer:
        body: dict[str, object] = {"code": self.code, "message": self.message}
        if self.fields:
            body["fields"] = [{"field": f.field, "rule": f.rule} for f in self.fields]
        retry_after = max(1, round(self.retry_after)) if self.retry_after else 0
        return Answer(self.status, msgspec.json.encode({"error": body}), retry_after)


class Intake:
    def __init__(
        self,
        settings: Settings,
        boards: BoardLookup,
        publish: Publish,
        waits: ProjectionWaits,
        home: HomePublish | None = None,
        erased: ErasureList | None = None,
    ) -> None:
        self._settings = settings
        self._erased = erased
        self._waits = waits
        self._errors = ThrottledLog(log)
        intake = settings.intake
        self._boards = CachedBoards(
            boards,
            intake.catalog_ttl_s,
            intake.max_unknown_boards,
            self._catalog_failed,
            max_stale_s=intake.catalog_max_stale_s,
        )
        self._admission = AwardAdmission(
            intake.max_in_flight_awards, intake.admission_wait_s, intake.max_loop_behind_ms, intake.ack_target_ms
        )
        self._produce = AwardRouter(settings.region, publish, home).produce
        self._secrets = {k: v.get_secret_value() for k, v in settings.intake.award_keys.items()}
        workers = settings.intake.workers  # each process holds its share of every key's rate
        self._buckets = TokenBuckets(
            settings.intake.rate_per_key / workers, settings.intake.burst_per_key / workers
        )

    def _catalog_failed(self, exc: Exception) -> None:
        self._errors.log(logging.WARNING, "catalog", "board catalog unavailable (%r)", exc)

    async def _body(self, receive: Receive, declared: str) -> bytes:
        """The body, read no further than the cap (a chunked body declares no length)."""
        limit = self._settings.intake.max_body_bytes
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        try:
            return await read_body(receive, limit)
        except TooLarge:
            raise _too_large(limit) from None

    def _authenticate(self, h: dict[str, str], body: bytes) -> str:
        result = verify(
            h.get("x-award-key-id"), h.get("x-award-timestamp"), h.get("x-award-signature"), body,
            self._secrets, int(time.time()), self._settings.intake.max_clock_skew_s,
        )  # fmt: skip
        if isinstance(result, Denied):
            if result.reason is AuthFailure.MISSING:
                fields = tuple(
                    FieldError(name, "is required") for name in AUTH_HEADERS if not h.get(name.lower())
                )
            else:
                fields = (FieldError(HEADER_AT_FAULT[result.reason], result.message),)
            raise Rejection(result.status, f"auth_{result.reason}", result.message, fields)
        return result

    async def _check_boards(
        self, awards: tuple[AwardInput, ...], prefixes: tuple[str, ...], now_ms: int
    ) -> dict[str, Board]:
        boards: dict[str, Board] = {}
        errors: list[FieldError] = []
        closed: list[FieldError] = []
        windows = self._settings.windows
        window_now = windows.now_ms(now_ms / 1000)
        for award, prefix in zip(awards, prefixes, strict=True):
            try:
                board = boards.get(award.leaderboard_id) or await self._boards.get(award.leaderboard_id)
            except CatalogUnavailable as exc:
                raise Rejection(
                    503, "store_unavailable", f"the board catalog cannot be read now to look up "
                    f"{award.leaderboard_id!r}; retry later", retry_after=2,
                ) from exc  # fmt: skip
            if board is None:
                raise Rejection(404, "unknown_board", f"leaderboard {award.leaderboard_id!r} does not exist",
                                (FieldError(prefix + "leaderboardId", "must name an existing board"),))  # fmt: skip
            if board.status is not BoardStatus.OPEN:
                raise Rejection(409, "board_closed", f"leaderboard {board.id!r} is {board.status}: it takes no "
                                "more awards", (FieldError(prefix + "leaderboardId", "must name an open board"),))  # fmt: skip
            boards[board.id] = board
            errors += check_against_board(award, board, prefix)
            errors += check_event_time(award, window_now, int(windows.max_future_s * 1000), prefix)
            spec = self._window(board)
            if spec is not None and not errors and award.occurred_at_ms is not None:
                rule = closed_rule(spec, award.occurred_at_ms, window_now, int(windows.grace_s * 1000))
                if rule is not None:
                    closed.append(FieldError(prefix + "occurredAt", rule))
        if errors:
            raise Rejection(400, "invalid_field", "some fields are invalid", tuple(errors))
        if closed:
            raise Rejection(409, "period_closed", "some awards fall in periods that take no more awards",
                            tuple(closed))  # fmt: skip
        return boards

    def _check_erased(self, awards: tuple[AwardInput, ...], prefixes: tuple[str, ...]) -> None:
        if self._erased is None:
            return
        if not self._erased.ready:
            raise Rejection(503, "store_unavailable", "the erasure list is not read yet (this intake just started, "
                            "or Cassandra does not answer); retry later", retry_after=2)  # fmt: skip
        erased = tuple(FieldError(prefix + "userId", "names an erased player: their awards are not taken")
                       for award, prefix in zip(awards, prefixes, strict=True) if self._erased.has(award.user_id))  # fmt: skip
        if erased:
            raise Rejection(410, "player_erased", "some awards are for players whose data was erased; an operator "
                            "lifts an erasure with 'ops/lb lift-erasure USER'", erased)  # fmt: skip

    @staticmethod
    def _window(board: Board) -> WindowSpec | None:
        try:
            return board.window_spec
        except InvalidWindow as exc:
            raise Rejection(
                503, "unsupported_window", f"leaderboard {board.id!r} has a time window this intake does not "
                f"know ({exc}): it takes the board's awards once it runs the release that created the board",
                retry_after=60,
            ) from exc  # fmt: skip

    def _event(self, award: AwardInput, board: Board, now_ms: int) -> AwardEvent:
        return AwardEvent(
            event_id=event_id(award.leaderboard_id, award.match_id, award.user_id, award.award_type),
            digest=payload_digest(award.amount, award.occurred_at_ms, award.metadata),
            board_id=award.leaderboard_id,
            match_id=award.match_id,
            user_id=award.user_id,
            award_type=award.award_type,
            amount=award.amount,
            occurred_at_ms=award.occurred_at_ms,
            region=board.accepting_region(self._settings.region),
            accepted_at_ms=now_ms,
            aggregation=board.aggregation.value,
            sort_order=board.sort_order.value,
            tie_policy=board.tie_policy.value,
            home_region=board.home_region,
            shards=board.shards,
            window=board.window or "",
            metadata=award.metadata,
            approximate=board.approximate_text,
        )

    async def accept(self, scope: Scope, receive: Receive) -> Answer:
        if self._admission.full():  # refused before anything is read: it costs next to nothing
            raise self._overloaded()
        if (behind := self._admission.behind()) is not None:
            raise self._overloaded(behind)
        waiting = _wait_of(scope["query_string"])
        # One pass over the raw headers; the first of repeated headers counts, as with Starlette's.
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(scope["headers"])}
        _check_content_type(headers.get("content-type", ""))
        body = await self._body(receive, headers.get("content-length", ""))
        key_id = self._authenticate(headers, body)
        try:
            raw = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise Rejection(400, "invalid_json", f"body is not valid JSON: {exc}",
                            (FieldError("body", "must be valid JSON"),)) from exc  # fmt: skip
        parsed = parse_request(raw, self._settings.intake.max_batch)
        if isinstance(parsed, BatchTooLarge):
            raise Rejection(
                413, "batch_too_large", f"{parsed.size} awards in one request; at most {parsed.limit}",
                (FieldError("awards", f"must hold at most {parsed.limit} awards"),),
            )  # fmt: skip
        if isinstance(parsed, Invalid):
            raise Rejection(400, "invalid_field", "some fields are invalid", parsed.errors)
        held = len(parsed.awards)
        if not await self._admission.enter(held):
            raise self._overloaded()
        admitted, acknowledged_after_s = time.monotonic(), None
        try:
            events, positions, pending = await self._admitted(parsed, key_id, waiting)
            if all(e.region == self._settings.region for e in events):  # not another region's: farther
                acknowledged_after_s = time.monotonic() - admitted  # the bound follows this (ack_target_ms)
        finally:
            self._admission.leave(held, acknowledged_after_s)
        accepted = [
            {"eventId": e.event_id, "region": e.region, "partition": p, "offset": o}
            for e, (p, o) in zip(events, positions, strict=True)
        ]
        if pending is not None:
            answers = await self._waits.applied(pending, positions, [e.region for e in events])
            for item, applied in zip(accepted, answers, strict=True):
                item["applied"] = None if applied is None else applied.encoded()
        count_accepted(a.leaderboard_id for a in parsed.awards)
        return Answer(202, msgspec.json.encode({"accepted": accepted}))

    async def _admitted(
        self, parsed: Parsed, key_id: str, waiting: AppliedWait | None
    ) -> tuple[list[AwardEvent], list[tuple[int, int]], PendingWait | None]:
        """The admitted request's checks against the boards and its key's rate, then its awards
        produced: the events, where Kafka put each, and the projection wait prepared before."""
        now_ms = int(time.time() * 1000)
        boards = await self._check_boards(parsed.awards, parsed.field_prefixes, now_ms)
        self._check_erased(parsed.awards, parsed.field_prefixes)
        wait = self._buckets.take(key_id, len(parsed.awards), time.monotonic())
        if wait:
            raise Rejection(429, "rate_limited", f"key {key_id!r} is over its award rate",
                            (FieldError("X-Award-Key-Id", "is over its award rate"),), retry_after=wait)  # fmt: skip
        events = [self._event(a, boards[a.leaderboard_id], now_ms) for a in parsed.awards]
        pending = None if waiting is None else await self._prepare(waiting, events, boards)
        try:
            positions = await self._produce(events, boards)
        except HomeUnavailable as exc:
            self._errors.log(logging.WARNING, "home", "awards not acknowledged by their home: %s", exc)
            raise Rejection(
                503, "home_unavailable", f"leaderboard awards routed to home region {exc.home} were not "
                "acknowledged there in time (the board is HOME_ROUTED: no other region accepts them); retry "
                "with the same awards (a repeat is counted once)",
                (FieldError("leaderboardId", f"is HOME_ROUTED to {exc.home}, which is unreachable now"),),
                retry_after=self._settings.intake.home_delivery_timeout_s,
            ) from exc  # fmt: skip
        except AcceptanceUnavailable as exc:
            self._errors.log(logging.WARNING, "kafka", "awards not acknowledged: %s", exc)
            raise Rejection(
                503, "kafka_unavailable", "Kafka did not acknowledge the awards in time; retry with the "
                "same awards (a repeat is counted once)", retry_after=1,
            ) from exc  # fmt: skip
        return events, positions, pending

    def _overloaded(self, behind_ms: float | None = None) -> Rejection:
        intake = self._settings.intake
        INTAKE_OVERLOADED.labels("in_flight" if behind_ms is None else "behind").inc()
        why = self._admission.why_full() if behind_ms is None else self._admission.why_behind(behind_ms)
        return Rejection(
            503, "overloaded", f"this intake {why}; nothing was written: send the same awards again after "
            "Retry-After seconds", retry_after=intake.overload_retry_after_s,
        )  # fmt: skip

    async def _prepare(
        self, wait: AppliedWait, events: list[AwardEvent], boards: dict[str, Board]
    ) -> PendingWait:
        """The wait's read before producing, of each award's player on the board it counts in."""
        players = [(boards[e.board_id].counting(e.event_at_ms), e.user_id) for e in events]
        return await self._waits.prepare(wait, players)

    def refused(self, rejection: Rejection) -> Answer:
        """The answer to a refused request, counted; a client's mistake is logged at INFO."""
        INTAKE_REQUESTS.labels(rejection.code).inc()
        if rejection.status < 500:
            fields = "; ".join(f"{f.field} {f.rule}" for f in rejection.fields)
            self._errors.log(logging.INFO, rejection.code, "refused %d %s: %s%s", rejection.status,
                             rejection.code, rejection.message, f" ({fields})" if fields else "")  # fmt: skip
        return rejection.answer()


def _too_large(limit: int) -> Rejection:
    return Rejection(
        413, "body_too_large", f"request body is over {limit} bytes",
        (FieldError("body", f"must be at most {limit} bytes"),),
    )  # fmt: skip


def _wait_of(query: bytes) -> AppliedWait | None:
    """The wait the query asks for (``regions.core.waits.parse_wait``); 400 naming each bad parameter."""
    if not query:
        return None
    wait = parse_wait(parse_qsl(query.decode("latin-1"), keep_blank_values=True))
    if isinstance(wait, Invalid):
        raise Rejection(400, "invalid_parameter", "some query parameters are invalid", wait.errors)
    return wait


def _check_content_type(value: str) -> None:
    """Awards are JSON in UTF-8: ``application/json``, with no charset or ``charset=utf-8``."""
    if value == "application/json":
        return
    media, *params = (part.strip().lower() for part in value.split(";"))
    charsets = [p.partition("=")[2].strip('"') for p in params if p.startswith("charset=")]
    if media != "application/json" or any(c not in ("utf-8", "utf8") for c in charsets):
        raise Rejection(
            415, "unsupported_media_type", f"Content-Type {value or '(none)'!r} is not JSON",
            (FieldError("Content-Type", "must be application/json"),),
        )  # fmt: skip


def create_app(
    settings: Settings,
    boards: BoardLookup,
    publish: Publish,
    health: Health,
    waits: ProjectionWaits | None = None,
    home: HomePublish | None = None,
    erased: ErasureList | None = None,
) -> IntakeApp:
    """The intake's app (``regions.intake.asgi``); ``waits`` (by default one that connects to the projection on its first
    wait) answers ``?wait=applied``, and whoever passes it closes it. ``home`` produces HOME_ROUTED
    boards' awards into their home region (none: such awards received here get 503 home_unavailable);
    ``erased`` is the erasure list (none: no player is refused as erased)."""
    intake = Intake(settings, boards, publish, waits or ProjectionWaits(settings), home, erased)

    accepted = INTAKE_REQUESTS.labels("accepted")

    described = msgspec.json.encode(document(settings.intake))  # this intake's own limits

    async def openapi_json(_: Request) -> Response:
        return Response(described, media_type="application/json")

    async def post_awards(scope: Scope, receive: Receive) -> Answer:
        started = time.perf_counter()
        try:
            answer = await intake.accept(scope, receive)
        except Rejection as rejection:
            answer = intake.refused(rejection)
        else:
            accepted.inc()
        INTAKE_SECONDS.observe(time.perf_counter() - started)
        return answer

    async def wrong_method(_: Request) -> Response:  # POST is answered by IntakeApp before routing
        return PlainTextResponse("Method Not Allowed", 405, headers={"Allow": "POST"})

    rest = Starlette(
        routes=[
            Route(AWARDS_PATH, wrong_method),
            Route("/openapi.json", openapi_json),
            *health_routes(health),
        ]
    )
    return IntakeApp(post_awards, rest)
