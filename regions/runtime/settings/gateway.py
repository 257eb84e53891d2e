"""The gateway's section: the GraphQL server, its limits, caches and subscriptions."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, Field, SecretStr, model_validator

from regions.runtime.settings.fields import ListenHost, UnknownBoards, Workers

DEV_ADMIN_TOKEN = "dev-admin-token"


class GatewaySettings(BaseModel):
    host: ListenHost = "127.0.0.1"
    port: int = Field(8080, description="Listen port of /graphql.")
    admin_token: SecretStr = Field(
        SecretStr(DEV_ADMIN_TOKEN),
        description="Admin bearer token; during a rotation the new and the old token, separated by a comma "
        "(either is accepted).",
    )
    allowed_origins: list[str] = Field(
        [],
        description="Origins (scheme://host[:port]) allowed by CORS and WebSocket handshakes; same origin always is.",
    )
    max_top_k: int = Field(100, ge=1, le=1000, description="Largest k of top(k); over it is an error.")
    max_context_range: int = Field(
        50, ge=0, le=500, description="Largest range of context(); over it is an error."
    )
    max_listed_players: int = Field(
        100, ge=1, le=1000, description="Most userIds of players(userIds); over it is an error."
    )
    max_followed_players: int = Field(
        50,
        ge=1,
        le=1000,
        description="Most userIds of one leaderboardUpdates subscription; over it is an error.",
    )
    max_query_depth: int = Field(8, ge=2, description="Deepest selection an operation may have.")
    max_query_tokens: int = Field(2000, ge=50, description="Most tokens in one GraphQL document.")
    max_aliases: int = Field(15, ge=1, description="Most aliases in one GraphQL document.")
    max_body_bytes: int = Field(
        65_536,
        ge=1024,
        description="Largest HTTP request body; over it is 413, refused before it is all read.",
    )
    max_ws_message_bytes: int = Field(
        65_536, ge=1024, description="Largest WebSocket message; over it the connection is closed (1009)."
    )
    max_query_cost: int = Field(
        5000,
        ge=1,
        description="Cost budget of one operation, counted before it runs (see gateway/core/cost.py: "
        "top(k: 100) with profiles costs about 500); over it is a COST_LIMIT_EXCEEDED error.",
    )
    max_listed_boards: int = Field(
        100, ge=1, description="Bound on the boards `leaderboards` returns, as the query cost counts it."
    )
    max_introspection_depth: int = Field(
        15, ge=2, description="Deepest nesting of an introspection query (the standard one is 14)."
    )
    introspection: bool | None = Field(
        None, description="Answer introspection queries; unset: on in development, off in production."
    )
    graphiql: bool = Field(
        False,
        description="Serve the GraphiQL page on GET /graphql from a browser, on the gateway's own files (ops/graphiql).",
    )
    top_cache_ttl_s: float = Field(
        0.5, ge=0, le=1, description="How long a top-K answer is reused (0: never)."
    )
    answer_cache_bytes: int = Field(
        16 << 20,
        ge=0,
        description="Memory for whole answers reused within top_cache_ttl_s (keys and bodies).",
    )
    board_cache_ttl_s: float = Field(2.0, ge=0, description="How long a board definition is reused.")
    max_unknown_boards: UnknownBoards = 10_000
    profile_timeout_s: float = Field(
        0.25,
        gt=0,
        description="How long a read waits for its batched profile lookup (the lookup itself goes on "
        "and fills the profile cache).",
    )
    profile_cache_ttl_s: float = Field(
        5.0, ge=0, description="How long a profile (or its absence) is reused by later reads (0: never)."
    )
    profile_cache_entries: int = Field(50_000, ge=1, description="Most profiles the gateway keeps in memory.")
    profile_breaker_failures: int = Field(
        3, ge=1, description="Failed lookups in a row that open the breaker."
    )
    profile_breaker_reset_s: float = Field(5.0, gt=0, description="How long an open breaker skips profiles.")
    connection_init_timeout_s: float = Field(10.0, gt=0, description="WebSocket connection_init deadline.")
    shutdown_grace_s: int = Field(
        10,
        ge=1,
        description="On shutdown, how long open requests and WebSockets may take to finish before they are "
        "cancelled: a client that stopped reading never completes its close handshake. Keep it under the "
        "pod's terminationGracePeriodSeconds (30).",
    )
    max_subscriptions_per_connection: int = Field(
        20, ge=1, description="Subscriptions one WebSocket may hold."
    )
    hint_min_interval_s: float = Field(
        0.05, ge=0, description="Shortest gap between two reads of one board's changes."
    )
    resync_after_coalesced: int = Field(
        32, ge=1, description="Undelivered updates a subscriber may have overwritten before it gets a Resync."
    )
    hints_ping_interval_s: float = Field(
        5.0,
        gt=0,
        description="A hints feed that heard nothing this long is sent a PING; one that then hears "
        "nothing for as long again is reconnected (its subscribers get a Resync). A partition that "
        "outlasts the server's patience drops the connection without a word reaching this side.",
    )
    max_tracked_players: int = Field(
        5000, ge=1, description="Distinct subscribed players per board and process (more are refused)."
    )
    redis_max_connections: int = Field(64, ge=2, description="Redis connections of one gateway process.")
    workers: Workers = Field(
        1,
        description="Gateway processes sharing the port (SO_REUSEPORT); each has its own caches.",
    )
    planned_reads: bool = Field(
        True,
        description="Run query documents answered once before by a compiled plan instead of the generic "
        "executor (same answers; see gateway/api/plans.py).",
    )
    persisted_query_entries: int = Field(
        1024,
        ge=1,
        description="Automatic persisted queries remembered per process (least recently used out).",
    )
    max_concurrent_operations: int = Field(
        256,
        ge=2,
        description="GraphQL operations over HTTP one gateway process runs at once (answers from the "
        "whole-answer cache do not count); over it a query gets 503 with Retry-After and the error code "
        "OVERLOADED, answered before it runs.",
    )
    reserved_for_mutations: int = Field(
        16,
        ge=1,
        description="The part of max_concurrent_operations only admin mutations (durable writes) may use: "
        "they are admitted while queries are refused as OVERLOADED.",
    )
    push_shed_at_operations: int = Field(
        128,
        ge=1,
        description="While this many operations are in flight, live push is shed first: board feeds defer "
        "their reads (a board's hints merge into its latest, counted in lb_gateway_hints_shed_total) and "
        "subscription streams hold their mailboxes (updates coalesce to the latest of each kind; a "
        "subscriber that overwrote resync_after_coalesced of them gets a Resync).",
    )
    overload_retry_after_s: int = Field(
        1, ge=1, le=60, description="Retry-After (seconds) of a query refused as OVERLOADED."
    )
    max_loop_behind_ms: float = Field(
        100.0,
        ge=0,
        description="Queries are refused as OVERLOADED, before they run, while the process's event loop has "
        "been more than this far behind its work for the last 100 ms (regions/runtime/loop_lag.py): requests "
        "queue before they are read, where no count of operations in flight sees them. Admin mutations are "
        "still run. 0: off.",
    )
    region_stale_after_s: float = Field(
        5.0,
        gt=0,
        description="A region not heard of (no award, no heartbeat) in a projection for longer than this is "
        "`stale` in asOf.regions.",
    )
    home_timeout_s: float = Field(
        1.0,
        gt=0,
        description="Longest wait for another region's projection (HOME reads of boards homed there); "
        "past it the read fails with HOME_UNAVAILABLE.",
    )

    def admin_tokens(self) -> list[str]:
        """Every accepted admin token (two during a rotation); none when the token is empty."""
        value = self.admin_token.get_secret_value()
        return [token.strip() for token in value.split(",")] if value else []

    @model_validator(mode="after")
    def _shares_within_the_bound(self) -> Self:
        if self.reserved_for_mutations >= self.max_concurrent_operations:
            raise ValueError(
                f"reserved_for_mutations ({self.reserved_for_mutations}) must be below "
                f"max_concurrent_operations ({self.max_concurrent_operations}): queries need a share too"
            )
        return self

    @model_validator(mode="after")
    def _one_token_per_comma(self) -> Self:
        if not all(self.admin_tokens()):
            raise ValueError("admin_token: empty token; give one token, or two separated by a comma")
        return self
