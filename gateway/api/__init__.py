"""The public GraphQL schema, code-first; ``schema/leaderboard.graphql`` is its exported SDL."""

from __future__ import annotations

import strawberry
from strawberry.schema.config import StrawberryConfig

from gateway.api.extensions import extensions
from gateway.api.mutation import Mutation
from gateway.api.query import Query
from gateway.api.scalars import LONG_SCALAR, Long
from gateway.api.subscription import Subscription
from regions.settings import Mode, Settings


def introspection_allowed(settings: Settings) -> bool:
    """``gateway.introspection`` when set; else on in development and off in production."""
    allowed = settings.gateway.introspection
    return settings.mode is not Mode.PRODUCTION if allowed is None else allowed


def build_schema(settings: Settings) -> strawberry.Schema:
    """The schema with the hardening extensions this gateway's settings ask for."""
    introspection = introspection_allowed(settings)
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        config=StrawberryConfig(scalar_map={Long: LONG_SCALAR}, disable_field_suggestions=not introspection),
        extensions=extensions(settings.gateway, introspection),
    )


def sdl() -> str:
    """The schema's SDL as exported to ``schema/leaderboard.graphql``."""
    return (
        strawberry.Schema(
            query=Query,
            mutation=Mutation,
            subscription=Subscription,
            config=StrawberryConfig(scalar_map={Long: LONG_SCALAR}),
        ).as_str()
        + "\n"
    )
