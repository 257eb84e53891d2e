"""Prometheus metrics of the gateway (served on /metrics with the region processes' format).

What operators look at: requests by operation and outcome (``lb_gateway_operation_seconds``), their
cost (``lb_gateway_query_cost``), the answer cache's hit ratio (``lb_gateway_answer_cache_total``:
(hit + stale + shared) / (hit + stale + shared + miss); stale: an expired answer given while it is
read again, shared: the answer of an identical request in flight),
subscribers (``lb_gateway_subscriptions``), mailbox drops (updates overwritten
before a slow subscriber read them: ``lb_gateway_updates_total{outcome="coalesced"}``), resyncs by
reason (``lb_gateway_resyncs_total``), live push shed under load (``lb_gateway_hints_shed_total``,
``lb_gateway_push_shed_total``), operations in flight, feed restarts, store errors and degraded profiles.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

OPERATIONS = Histogram(
    "lb_gateway_operation_seconds",
    "GraphQL operations by type, root fields and outcome (see gateway/api/extensions.py)",
    ["type", "operation", "outcome"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
QUERY_COST = Histogram(
    "lb_gateway_query_cost",
    "Estimated cost of the operations that ran (see gateway/core/cost.py)",
    buckets=(1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000),
)
REFUSED = Counter(
    "lb_gateway_refused_total", "Requests refused before GraphQL ran, by reason", ["reason"]
)  # body_too_large | overloaded (over gateway.max_concurrent_operations, answered 503 OVERLOADED)
OPERATIONS_IN_FLIGHT = Gauge(
    "lb_gateway_operations_in_flight", "GraphQL operations over HTTP running in this process"
)
PUSH_SHED = Counter(
    "lb_gateway_push_shed_total",
    "Times live push was paused because gateway.push_shed_at_operations operations were in flight",
)
HINTS_SHED = Counter(
    "lb_gateway_hints_shed_total",
    "Hints received while live push was shed: merged into their board's latest, read once push resumes",
)
ANSWER_CACHE = Counter(
    "lb_gateway_answer_cache_total",
    "Cacheable requests answered from the cache (fresh, or expired while read again), by an identical request "
    "in flight, or read; answers stored",
    ["result"],
)  # hit | stale | shared | miss | stored
ANSWER_CACHE_BYTES = Gauge("lb_gateway_answer_cache_bytes", "Bytes held by the whole-answer cache")
TOP_CACHE = Counter("lb_gateway_top_cache_total", "Top-K micro-cache lookups", ["result"])
PROFILE_LOOKUPS = Counter(
    "lb_gateway_profile_lookups_total", "Batched profile lookups", ["outcome"]
)  # ok (also when late) | timeout (past the budget) | error | skipped (breaker open)
PROFILE_LOOKUP_SECONDS = Histogram(
    "lb_gateway_profile_lookup_seconds",
    "Time of one batched profile lookup, to its end (also past the budget)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5),
)
PROFILES_UNAVAILABLE = Counter(
    "lb_gateway_profiles_unavailable_total", "Profile fields answered null because the store could not say"
)
PROFILE_BREAKER_OPEN = Gauge("lb_gateway_profile_breaker_open", "1 while the profile breaker skips the store")
SUBSCRIPTIONS = Gauge(
    "lb_gateway_subscriptions",
    "leaderboardUpdates subscriptions being told updates (their board and player read)",
)
FEEDS = Gauge("lb_gateway_board_feeds", "Boards with at least one subscriber in this process")
HINTS_IN = Counter("lb_gateway_hints_in_total", "Hints received from the upstream feed")
UPDATES = Counter(
    "lb_gateway_updates_total", "Updates offered to subscriber mailboxes", ["outcome"]
)  # queued | coalesced (an undelivered one was dropped for it) | resync (too many dropped)
UPDATES_SENT = Counter("lb_gateway_updates_sent_total", "Updates handed to subscription streams")
RESYNCS = Counter("lb_gateway_resyncs_total", "Resync updates by reason", ["reason"])
STORE_ERRORS = Counter(
    "lb_gateway_store_errors_total", "Failed calls to a store (Cassandra) by store", ["store"]
)  # catalog | profiles | results
FEED_RESTARTS = Counter(
    "lb_gateway_feed_restarts_total", "Hints feed tasks that failed and were restarted", ["reason"]
)  # read_failed (Redis) | feed_failed (a bug) | upstream_failed
UPSTREAM_CONNECTED = Gauge("lb_gateway_hints_upstream_connected", "1 while the hints feed is subscribed")
PLANNED = Counter(
    "lb_gateway_planned_total",
    "Operations of known documents run by their compiled plan, or declined to the generic executor",
    ["outcome"],
)  # answered | declined (an error or a null the plan does not answer: the generic executor does)
HOME_READ_FAILURES = Counter(
    "lb_gateway_home_read_failures_total",
    "HOME reads of another region's projection that failed or timed out (answered HOME_UNAVAILABLE), "
    "by home region",
    ["region"],
)
