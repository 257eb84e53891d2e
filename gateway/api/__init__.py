"""The public GraphQL schema, code-first; ``schema/leaderboard.graphql`` is its exported SDL."""

from __future__ import annotations

import logging

import strawberry
from graphql import GraphQLError
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext
from strawberry.utils.logging import StrawberryLogger

from gateway.api.errors import error_code
from gateway.api.extensions import extensions
from gateway.api.mutation import Mutation
from gateway.api.query import Query
from gateway.api.scalars import JSON, JSON_SCALAR, LONG_SCALAR, Long
from gateway.api.subscription import Subscription
from regions.runtime.settings import Mode, Settings

log = logging.getLogger("gateway.requests")


def introspection_allowed(settings: Settings) -> bool:
    """``gateway.introspection`` when set; else on in development and off in production."""
    allowed = settings.gateway.introspection
    return settings.mode is not Mode.PRODUCTION if allowed is None else allowed


class GatewaySchema(strawberry.Schema):
    """Errors a client caused (a bad argument, a refused query, an unknown board) or a store outage
    are logged in one line at INFO; only failures of the code are logged at ERROR, with traceback."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            code = error_code(error)
            if code == "INTERNAL":
                StrawberryLogger.error(error, execution_context)
            else:
                log.info("%s: %s", code, error.message)


def build_schema(settings: Settings) -> strawberry.Schema:
    """The schema with the hardening extensions this gateway's settings ask for."""
    introspection = introspection_allowed(settings)
    return GatewaySchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        config=StrawberryConfig(scalar_map={Long: LONG_SCALAR, JSON: JSON_SCALAR}, disable_field_suggestions=not introspection),
        extensions=extensions(settings.gateway, introspection),
    )


def sdl() -> str:
    """The schema's SDL as exported to ``schema/leaderboard.graphql``."""
    return (
        strawberry.Schema(
            query=Query,
            mutation=Mutation,
            subscription=Subscription,
            config=StrawberryConfig(scalar_map={Long: LONG_SCALAR, JSON: JSON_SCALAR}),
        ).as_str()
        + "\n"
    )
