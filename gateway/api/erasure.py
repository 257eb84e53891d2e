"""Erasure (admin): removing a player from every board of every region and every store, and its progress."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from enum import Enum

import strawberry
from strawberry.types import Info

from gateway.api import fields, ids
from gateway.api.admin import admin_services
from gateway.api.context import Context
from gateway.api.errors import InvalidInput, StoreUnavailable
from gateway.api.scalars import JSON
from gateway.services import Services
from regions.actions.erase import request_erasure
from regions.actions.export import export_player
from regions.actions.home import ActionRefused
from regions.core.erasure import parse_erasure, step_list
from regions.stores.cassandra.erasures import ErasureEntry
from regions.stores.redis.reads import RankReader
from schema.erasure import erasure_token


@strawberry.enum(description="PENDING: being carried out; DONE: the player is in no store but the raw topics, "
                 "until rawRecordsUntil; LIFTED: an operator lifted it (their new awards are taken again).")  # fmt: skip
class ErasureStatus(Enum):
    PENDING = "PENDING"
    DONE = "DONE"
    LIFTED = "LIFTED"


@strawberry.type(description="How far one store is: PENDING, DONE or FAILED (detail says why; it is tried again).")
class ErasureStep:
    store: str
    status: str
    detail: str


@strawberry.type(description="A player's erasure, asked in `region`, whose lifecycle worker carries it out.")
class Erasure:
    user_id: strawberry.ID
    status: ErasureStatus
    reason: str
    region: str
    requested_at: datetime
    completed_at: datetime | None
    raw_records_until: datetime = strawberry.field(
        description="The raw topics (awards, replicated awards, applied, reconciliation) hold none of the "
        "player's awards from then on (kafka.raw_retention_ms after the request)."
    )
    steps: list[ErasureStep]

    @staticmethod
    def of(entry: ErasureEntry, user_id: str, services: Services) -> Erasure:
        def utc(at: datetime) -> datetime:
            return at if at.tzinfo else at.replace(tzinfo=UTC)

        status = (ErasureStatus.LIFTED if entry.lifted_at is not None
                  else ErasureStatus.DONE if entry.completed_at is not None else ErasureStatus.PENDING)  # fmt: skip
        requested = utc(entry.requested_at)
        retention = timedelta(milliseconds=services.settings.kafka.raw_retention_ms)
        steps = step_list(entry.steps, services.settings.region_names())
        return Erasure(user_id=strawberry.ID(user_id), status=status, reason=entry.reason, region=entry.region,
                       requested_at=requested, completed_at=entry.completed_at and utc(entry.completed_at),
                       raw_records_until=requested + retention,
                       steps=[ErasureStep(store=s.store, status=s.status, detail=s.detail) for s in steps])  # fmt: skip


@strawberry.type
class ErasureMutation:
    @fields.mutation(
        "Erase a player (admin): from every board of every region and from every store, the raw topics "
        "until their retention passes. Recorded at once (PENDING), carried out by this region's lifecycle "
        "worker; from now on the intakes refuse the player's awards (410 player_erased) until an operator "
        "lifts it. Asking again answers the standing erasure."
    )
    async def erase_player(self, info: Info[Context, None], user_id: strawberry.ID, reason: str) -> Erasure:
        services = admin_services(info)
        request = parse_erasure(str(user_id), reason)
        if isinstance(request, list):
            raise InvalidInput("; ".join(f"{e.field}: {e.rule}" for e in request))
        try:
            entry = await request_erasure(services.cassandra.adapter.erasures, request,
                                          region=services.settings.region, now=datetime.now(UTC))  # fmt: skip
        except ActionRefused as refused:
            raise StoreUnavailable(str(refused)) from refused
        return Erasure.of(entry, request.user_id, services)


@strawberry.type
class ErasureQuery:
    @fields.field("A player's erasure (admin); null when none was asked.")
    async def erasure(self, info: Info[Context, None], user_id: strawberry.ID) -> Erasure | None:
        services = admin_services(info)
        user = ids.user_id("userId", str(user_id))
        entry = await services.cassandra.adapter.erasures.get(erasure_token(user))
        return None if entry is None else Erasure.of(entry, user, services)

    @fields.field(
        "Everything this region holds about a player (admin), as one JSON document: every board's total, "
        "rank and metadata (on an approximate board: the estimate, no rank, and whether its count is verified), "
        "their audit history, their entries in archived results, their profile (ops/lb export-player writes "
        "the same document)."
    )
    async def player_export(self, info: Info[Context, None], user_id: strawberry.ID) -> JSON:
        services = admin_services(info)
        user = ids.user_id("userId", str(user_id))
        stores = services.cassandra.adapter
        reader = RankReader(services.projection, services.settings.redis.key_prefix, services.settings.region)
        document = await export_player(stores.players, stores.catalog, reader, user, now=datetime.now(UTC))
        return JSON(json.dumps(document, separators=(",", ":"), default=str))
