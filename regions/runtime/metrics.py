"""Prometheus metrics of the region's processes, served on each one's ``/metrics``.

Runtime and consumer-lag metrics come from ``regions.runtime.health``; these say what the work itself did.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram

INTAKE_REQUESTS = Counter(
    "lb_intake_requests", "Award requests answered, by outcome (accepted, or the error code)", ["outcome"]
)
INTAKE_AWARDS = Counter("lb_intake_awards_accepted", "Awards acknowledged by Kafka and answered 202")
INTAKE_BOARD_AWARDS = Counter(
    "lb_intake_board_awards_accepted",
    "Awards answered 202, by board (one series per board an intake took awards for)",
    ["board"],
)
INTAKE_SECONDS = Histogram(
    "lb_intake_request_seconds",
    "Time from a request's arrival to its answer",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 15),
)
INTAKE_OVERLOADED = Counter(
    "lb_intake_overloaded",
    "Award requests refused 503 overloaded, nothing of them produced, by reason: in_flight (over "
    "intake.max_in_flight_awards) or behind (the process's event loop over intake.max_loop_behind_ms)",
    ["reason"],
)
INTAKE_IN_FLIGHT = Gauge(
    "lb_intake_awards_in_flight",
    "Awards this intake process holds between reading their request and Kafka's acknowledgement",
)
INTAKE_IN_FLIGHT_LIMIT = Gauge(
    "lb_intake_awards_in_flight_limit",
    "The bound of awards this intake process holds in flight now: intake.max_in_flight_awards, lowered "
    "while Kafka acknowledges slower than intake.ack_target_ms",
)
INTAKE_APPLIED = Counter(
    "lb_intake_applied_waits",
    "Awards answered with wait=applied, by outcome (applied: the projection covered the award; timeout: "
    "the answer's applied is null; unreadable: the projection could not be read, applied is null)",
    ["outcome"],
)
INTAKE_HOME_PRODUCE_REQUESTS = Counter(
    "lb_intake_home_produce_requests",
    "Produce requests sent to another region's cluster with HOME_ROUTED boards' awards, by home region "
    "(each one network round trip to that cluster, carrying every award ready for it)",
    ["home"],
)
INTAKE_HOME_AWARDS = Counter(
    "lb_intake_home_routed_awards",
    "Awards of HOME_ROUTED boards acknowledged by their home region's cluster for this intake, by home region",
    ["home"],
)

AUDIT_BACKLOG = Gauge(
    "lb_audit_backlog_records",
    "Offsets of the applied-award feed not yet written to the audit history (read from Kafka, so true also "
    "while Cassandra is down; transaction markers count too, so it is an upper bound on records)",
)
AUDIT_WRITTEN = Counter(
    "lb_audit_rows_written", "Audit rows written (a row found already written is not counted)"
)
AUDIT_PRESENT = Counter(
    "lb_audit_rows_present",
    "Audit rows found already written when their records were read again (a sink stopped before "
    "committing them), so not written again",
)
AUDIT_DELETED = Counter(
    "lb_audit_deleted_records_total",
    "Applied-award records retention deleted before the audit sink wrote their rows: history rows "
    "missing for good (the sink was behind longer than the applied topic keeps records)",
)
AUDIT_RECONCILED = Counter(
    "lb_audit_reconciled",
    "Applied-award records the audit could not write, sent to reconciliation",
    ["reason"],
)
INTAKE_PRODUCER_RENEWALS = Counter(
    "lb_intake_producer_renewals",
    "Kafka producers replaced by a new one (a new producer id) after the brokers refused their sequence numbers",
)
INTAKE_HEARTBEATS = Counter(
    "lb_intake_heartbeats",
    "Rounds of heartbeats (one record per awards partition), by outcome (written, or failed)",
    ["outcome"],
)
AUDIT_LEFT_TO_HOME = Counter(
    "lb_audit_left_to_home",
    "Applied awards of boards homed in another region: that region's audit sink records them",
)


def count_accepted(boards: Iterable[str]) -> None:
    """Count one acknowledged request's awards, given the board of each."""
    by_board = Tally(boards)
    INTAKE_AWARDS.inc(by_board.total())
    for board, n in by_board.items():
        INTAKE_BOARD_AWARDS.labels(board).inc(n)
