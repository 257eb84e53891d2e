"""Prometheus metrics of a replicator, per source region (and partition where it has one)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import Counter, Gauge, Histogram

from replicator.core import lag
from schema.replication import ReplicationCheckpoint

_BY_PARTITION = ["source", "partition"]

LAG_RECORDS = Gauge(
    "lb_replicator_lag_records",
    "Source records not yet copied (while the source does not answer: at least, by its end as last read)",
    _BY_PARTITION,
)
LAG_SECONDS = Gauge(
    "lb_replicator_lag_seconds",
    "While records remain uncopied or the source does not answer, the age of the newest copied one "
    "(0 when caught up)",
    _BY_PARTITION,
)
CHECKPOINT = Gauge("lb_replicator_checkpoint_offset", "Next source offset to copy", _BY_PARTITION)
SOURCE_END = Gauge(
    "lb_replicator_source_end_offset", "Source partition's end (last stable offset)", _BY_PARTITION
)
COPIED = Counter("lb_replicator_records_copied_total", "Source records copied", _BY_PARTITION)
SKIPPED = Counter(
    "lb_replicator_records_skipped_total",
    "Source records not copied because they are copies themselves (no second hop)",
    _BY_PARTITION,
)
GAPS = Counter(
    "lb_replicator_gaps_total", "Gaps reported: source records deleted before they were copied", _BY_PARTITION
)
MISSING = Counter("lb_replicator_missing_records_total", "Source offsets inside reported gaps", _BY_PARTITION)
FENCED = Counter(
    "lb_replicator_fenced_total", "Times another instance of this replicator pair fenced this one", ["source"]
)
ABORTS = Counter(
    "lb_replicator_transaction_aborts_total", "Local transactions that did not commit", ["source"]
)
SOURCE_REACHABLE = Gauge(
    "lb_replicator_source_reachable", "1 while the source region's brokers answer offset requests", ["source"]
)
COPY_LATENCY = Histogram(
    "lb_replicator_copy_latency_seconds",
    "From a record's acceptance in the source region to its copy's commit here",
    ["source"],
    buckets=(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30, 60, 300),
)


def report_progress(
    source: str,
    checkpoints: Mapping[int, ReplicationCheckpoint],
    log_end: Mapping[int, int],
    now_ms: int,
    source_answers: bool = True,
) -> dict[int, int]:
    """Set the lag and checkpoint gauges of every partition; returns the record lag per partition."""
    records: dict[int, int] = {}
    for p, checkpoint in checkpoints.items():
        end = max(log_end.get(p, 0), checkpoint.next_offset)
        behind = lag(checkpoint, end, now_ms, source_answers)
        labels = (source, str(p))
        records[p] = behind.records
        LAG_RECORDS.labels(*labels).set(behind.records)
        LAG_SECONDS.labels(*labels).set(float("nan") if behind.seconds is None else behind.seconds)
        CHECKPOINT.labels(*labels).set(checkpoint.next_offset)
        SOURCE_END.labels(*labels).set(end)
    return records
