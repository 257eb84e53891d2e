"""Prometheus metrics of the projector (served on its /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

FRESHNESS = Histogram(
    "lb_projector_freshness_seconds",
    "From an award's acceptance to its visibility in the projection (the newest award of each "
    "processor transaction, when the positions move past it), by the region that accepted it",
    ["region"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
OLDEST_UNPROJECTED = Gauge(
    "lb_projector_oldest_unprojected_seconds",
    "Age of the oldest totals record fetched and not yet visible (0 when caught up)",
)
TOTALS_READ = Counter("lb_projector_totals_records_total", "Totals topic records consumed by the live loop")
TOTALS_APPLIED = Counter(
    "lb_projector_totals_applied_total", "Player totals written to the projection (newer versions only)"
)
UNPROJECTABLE = Counter(
    "lb_projector_unprojectable_total", "Totals records set aside and sent to reconciliation", ["reason"]
)
PROJECTION_LOST = Counter(
    "lb_projector_projection_lost_total", "Times Redis was found without the projection's epoch"
)
REBUILDS = Counter("lb_projector_rebuilds_total", "Rebuilds finished", ["cause", "outcome"])
REBUILD_SECONDS = Histogram(
    "lb_projector_rebuild_seconds",
    "Duration of a rebuild, from its start to the swap",
    ["cause"],
    buckets=(0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
)
REBUILDING = Gauge(
    "lb_projector_rebuilding", "1 while a rebuild runs (cause lost: every read says stale)", ["cause"]
)
REBUILD_PROGRESS = Gauge(
    "lb_projector_rebuild_progress_ratio", "Share of the replay done by the running rebuild"
)
LIVE_PAUSE_SECONDS = Histogram(
    "lb_projector_live_pause_seconds",
    "How long a rebuild held the live loop for its last catch-up and swap",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
LEASE_HELD = Gauge("lb_projector_lease_held", "1 while this process holds the projection's write lease")
