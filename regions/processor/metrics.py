"""Prometheus metrics of the processor."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import Counter, Gauge, Histogram

AWARDS_APPLIED = Counter("lb_processor_awards_applied_total", "Awards applied to a total")
REPEATS_IGNORED = Counter(
    "lb_processor_repeats_ignored_total", "Identical repeats of an event id within the dedupe horizon"
)
RECONCILED = Counter(
    "lb_processor_reconciled_total", "Records sent to reconciliation instead of being applied", ["reason"]
)
DELETED_UNREAD = Counter(
    "lb_processor_deleted_records_total",
    "Source records retention deleted before the processor read them: awards acknowledged and never "
    "applied (by the accepting region)",
    ["source_region"],
)
CONTROL_RECORDS = Counter(
    "lb_processor_control_records_total", "Control records read from the sources", ["kind"]
)
TRANSACTION_SECONDS = Histogram(
    "lb_processor_transaction_seconds",
    "Time of one partition's transaction (begin to commit)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
RESTORE_SECONDS = Histogram(
    "lb_processor_restore_seconds",
    "Time to restore one partition's state store before processing it",
    ["mode"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600),
)
RESTORE_RECORDS = Counter(
    "lb_processor_restore_records_total", "Changelog records read while restoring", ["mode"]
)
DEDUPE_PURGED = Counter(
    "lb_processor_dedupe_purged_total",
    "Remembered event ids forgotten once every source passed them by the horizon and its margin",
)
DEDUPE_REMEMBERED = Gauge(
    "lb_processor_dedupe_remembered",
    "Event ids the dedupe memory holds (approximate: the restored records, then counted)",
    ["partition"],
)
DEDUPE_OLDEST_AGE = Gauge(
    "lb_processor_dedupe_oldest_age_seconds",
    "Age of the oldest copy the dedupe memory holds (grows while a source lags: a cut region, a backlog)",
    ["partition"],
)
COPIES_REPLACED = Counter(
    "lb_processor_copies_replaced_total",
    "Copies of an event id applied here that lost to an earlier copy read later (a retry accepted in "
    "another region): the earlier copy's total, tie order and audit row replaced them",
)


def count_round(counts: Mapping[str, int]) -> None:
    """Add what one committed round met (``Round.counts``) to the metrics."""
    for what, n in counts.items():
        if what == "applied":
            AWARDS_APPLIED.inc(n)
        elif what == "duplicate":
            REPEATS_IGNORED.inc(n)
        elif what == "dedupe_forgotten":
            DEDUPE_PURGED.inc(n)
        elif what == "copy_replaced":
            COPIES_REPLACED.inc(n)
        elif what == "dedupe_remembered":
            pass
        elif what.startswith("reconciled:"):
            RECONCILED.labels(what.removeprefix("reconciled:")).inc(n)
        else:
            CONTROL_RECORDS.labels(what).inc(n)
