"""The chart's Grafana dashboards, built with grafana-foundation-sdk; writes ``leaderboard/dashboards/``.

    .venv/bin/python helm/dashboards.py          # rewrite the dashboards' JSON
    .venv/bin/python helm/dashboards.py --check  # exit 1 when a committed file differs from the code

Every panel queries what the processes export on ``/metrics`` (``regions/runtime/metrics.py``, each
service's ``metrics.py``, ``lb_consumer_lag`` and ``lb_readiness_check`` of ``regions/runtime/health.py``,
the client library's ``process_*``), with the target labels the chart's ServiceMonitor adds:
``leaderboard_region`` (the release's region) and ``component``. Redis memory and keys come from
redis_exporter (``redis_*``), which the chart does not run. Every selector is written with braces
(``redis_db_keys{}``), so the tests find each metric a panel reads. The chart ships the files as ConfigMaps
for Grafana's dashboard sidecar (``templates/dashboards.yaml``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from grafana_foundation_sdk.builders import common, prometheus, timeseries
from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    VariableRefresh,
    VariableSort,
)

OUT = Path(__file__).parent / "leaderboard" / "dashboards"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
REGION = 'leaderboard_region=~"$region"'
RATE = "$__rate_interval"


@dataclass(frozen=True, slots=True)
class Query:
    expr: str
    legend: str


@dataclass(frozen=True, slots=True)
class Graph:
    """One time-series panel: what it shows (``description``), its unit and its queries."""

    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]
    repeat: str = ""


def p99(metric: str, by: str, selector: str = REGION, q: str = "0.99") -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) (rate({metric}_bucket{{{selector}}}[{RATE}])))"


def rate(metric: str, by: str, selector: str = REGION) -> str:
    return f"sum by ({by}) (rate({metric}{{{selector}}}[{RATE}]))"


OVERVIEW: dict[str, tuple[Graph, ...]] = {
    "Awards": (
        Graph(
            "Award requests by outcome",
            "Requests answered by the intakes: accepted (202) or the "
            "error code; and the awards they accepted.",
            "reqps",
            (
                Query(
                    rate("lb_intake_requests_total", "leaderboard_region, outcome"),
                    "{{leaderboard_region}} {{outcome}}",
                ),
                Query(
                    rate("lb_intake_awards_accepted_total", "leaderboard_region"),
                    "{{leaderboard_region}} awards accepted",
                ),
            ),
        ),
        Graph(
            "Ack latency",
            "From a request's arrival at the intake to its answer (202 only after "
            "Kafka acknowledged every award with acks=all).",
            "s",
            (
                Query(
                    p99("lb_intake_request_seconds", "leaderboard_region", q="0.5"),
                    "{{leaderboard_region}} p50",
                ),
                Query(p99("lb_intake_request_seconds", "leaderboard_region"), "{{leaderboard_region}} p99"),
            ),
        ),
    ),
    "Freshness": (
        Graph(
            "REGIONAL freshness in $region",
            "Awards accepted in this region, from acceptance to "
            "visible in its own projection (what REGIONAL reads see); target p99 < 1 s.",
            "s",
            (
                Query(
                    p99(
                        "lb_projector_freshness_seconds",
                        "leaderboard_region",
                        'leaderboard_region=~"$region", region=~"$region"',
                    ),
                    "{{leaderboard_region}} p99",
                ),
            ),
            repeat="region",
        ),
        Graph(
            "HOME freshness in $region",
            "Awards accepted in the other regions, from acceptance "
            "to visible in this region's projection: what HOME reads of boards homed here see of "
            "them (replication included); target p99 < 2 s.",
            "s",
            (
                Query(
                    p99(
                        "lb_projector_freshness_seconds",
                        "leaderboard_region, region",
                        'leaderboard_region=~"$region", region!~"$region"',
                    ),
                    "{{region}} in {{leaderboard_region}} p99",
                ),
            ),
            repeat="region",
        ),
    ),
    "Lag": (
        Graph(
            "Consumer lag (records)",
            "Records not yet processed, by process and topic (summed over partitions).",
            "short",
            (
                Query(
                    f"sum by (leaderboard_region, service, topic) (lb_consumer_lag{{{REGION}}})",
                    "{{leaderboard_region}} {{service}} {{topic}}",
                ),
            ),
        ),
        Graph(
            "Consumer lag (seconds)",
            "The projector's oldest totals record fetched and not yet "
            "visible (0 when caught up); the processors export their lag in records only.",
            "s",
            (
                Query(
                    f"max by (leaderboard_region) (lb_projector_oldest_unprojected_seconds{{{REGION}}})",
                    "{{leaderboard_region}} projector",
                ),
            ),
        ),
        Graph(
            "Replication lag",
            "Per source region: the age of the newest copied record while "
            "records remain uncopied or the source does not answer; and the records left.",
            "s",
            (
                Query(
                    f"max by (leaderboard_region, source) (lb_replicator_lag_seconds{{{REGION}}})",
                    "{{source}} -> {{leaderboard_region}} seconds",
                ),
                Query(
                    f"sum by (leaderboard_region, source) (lb_replicator_lag_records{{{REGION}}})",
                    "{{source}} -> {{leaderboard_region}} records",
                ),
            ),
        ),
        Graph(
            "Replication gaps and fencings",
            "Gaps: source records deleted before they were "
            "copied. Fencings: another instance of a replicator pair took over. Aborts: local "
            "transactions that did not commit.",
            "short",
            (
                Query(
                    f"sum by (leaderboard_region, source) (increase(lb_replicator_gaps_total{{{REGION}}}[{RATE}]))",
                    "{{source}} -> {{leaderboard_region}} gaps",
                ),
                Query(
                    f"sum by (leaderboard_region, source) (increase(lb_replicator_fenced_total{{{REGION}}}[{RATE}]))",
                    "{{source}} -> {{leaderboard_region}} fenced",
                ),
                Query(
                    f"sum by (leaderboard_region, source) (increase(lb_replicator_transaction_aborts_total{{{REGION}}}[{RATE}]))",
                    "{{source}} -> {{leaderboard_region}} aborts",
                ),
            ),
        ),
    ),
    "Reconciliation and audit": (
        Graph(
            "Reconciliation by reason",
            "Records set aside instead of applied (processor), "
            "written (audit) or projected (projector): ops/lb reconciliation shows them.",
            "short",
            (
                Query(
                    rate("lb_processor_reconciled_total", "leaderboard_region, reason"),
                    "{{leaderboard_region}} processor {{reason}}",
                ),
                Query(
                    rate("lb_audit_reconciled_total", "leaderboard_region, reason"),
                    "{{leaderboard_region}} audit {{reason}}",
                ),
                Query(
                    rate("lb_projector_unprojectable_total", "leaderboard_region, reason"),
                    "{{leaderboard_region}} projector {{reason}}",
                ),
            ),
        ),
        Graph(
            "Audit backlog",
            "Offsets of the applied feed not yet written to the audit history "
            "(read from Kafka, so true while Cassandra is down; an upper bound).",
            "short",
            (
                Query(
                    f"sum by (leaderboard_region) (lb_audit_backlog_records{{{REGION}}})",
                    "{{leaderboard_region}} backlog",
                ),
                Query(
                    rate("lb_audit_rows_written_total", "leaderboard_region"),
                    "{{leaderboard_region}} rows written/s",
                ),
            ),
        ),
    ),
    "Redis": (
        Graph(
            "Redis memory",
            "Used memory of the projection's Redis servers (redis_exporter).",
            "bytes",
            (
                Query("sum by (instance) (redis_memory_used_bytes{})", "{{instance}} used"),
                Query("sum by (instance) (redis_memory_max_bytes{})", "{{instance}} max"),
            ),
        ),
        Graph(
            "Redis keys",
            "Keys of the projection's Redis servers (redis_exporter).",
            "short",
            (Query("sum by (instance) (redis_db_keys{})", "{{instance}}"),),
        ),
    ),
    "Gateway": (
        Graph(
            "Gateway operations by root field",
            "GraphQL operations by type, root fields and outcome.",
            "reqps",
            (
                Query(
                    rate(
                        "lb_gateway_operation_seconds_count", "leaderboard_region, type, operation, outcome"
                    ),
                    "{{leaderboard_region}} {{type}} {{operation}} {{outcome}}",
                ),
            ),
        ),
        Graph(
            "Gateway latency p99 by root field",
            "Time of a GraphQL operation, by type and root fields.",
            "s",
            (
                Query(
                    p99("lb_gateway_operation_seconds", "leaderboard_region, type, operation"),
                    "{{leaderboard_region}} {{type}} {{operation}}",
                ),
            ),
        ),
        Graph(
            "Subscriptions and dropped hints",
            "Subscriptions being told updates; updates "
            "coalesced (an undelivered one dropped for a newer one) and resyncs sent (too many "
            "dropped, or hints missed).",
            "short",
            (
                Query(
                    f"sum by (leaderboard_region) (lb_gateway_subscriptions{{{REGION}}})",
                    "{{leaderboard_region}} subscriptions",
                ),
                Query(
                    rate(
                        "lb_gateway_updates_total",
                        "leaderboard_region, outcome",
                        f'{REGION}, outcome="coalesced"',
                    ),
                    "{{leaderboard_region}} coalesced/s",
                ),
                Query(
                    rate("lb_gateway_resyncs_total", "leaderboard_region, reason"),
                    "{{leaderboard_region}} resync {{reason}}/s",
                ),
            ),
        ),
    ),
    "Processes": (
        Graph(
            "Restarts",
            "Process starts seen within 15 minutes, by component (a crash loop shows "
            "as a count that keeps rising).",
            "short",
            (
                Query(
                    f"sum by (leaderboard_region, component) (changes(process_start_time_seconds{{{REGION}}}[15m]))",
                    "{{leaderboard_region}} {{component}}",
                ),
            ),
        ),
        Graph(
            "Readiness checks",
            "Each /readyz check of each process: 1 holds, 0 missing "
            "(advisory ones, such as the intake's cassandra, leave it ready).",
            "short",
            (
                Query(
                    f"min by (leaderboard_region, service, check) (lb_readiness_check{{{REGION}}})",
                    "{{leaderboard_region}} {{service}} {{check}}",
                ),
            ),
        ),
        Graph(
            "Kafka heartbeats",
            "Rounds of the intakes' heartbeats by outcome: failed rounds "
            "mean Kafka does not acknowledge writes.",
            "short",
            (
                Query(
                    rate("lb_intake_heartbeats_total", "leaderboard_region, outcome"),
                    "{{leaderboard_region}} {{outcome}}",
                ),
            ),
        ),
    ),
}

BOARD = 'board=~"$board"'
BOARD_PANELS: dict[str, tuple[Graph, ...]] = {
    "Board $board": (
        Graph(
            "Awards accepted",
            "Awards of the board answered 202, by region.",
            "reqps",
            (
                Query(
                    rate(
                        "lb_intake_board_awards_accepted_total",
                        "leaderboard_region, board",
                        f"{REGION}, {BOARD}",
                    ),
                    "{{board}} in {{leaderboard_region}}",
                ),
            ),
        ),
        Graph(
            "Share of the region's awards",
            "The board's awards over every award the region accepted.",
            "percentunit",
            (
                Query(
                    f"sum by (leaderboard_region) (rate(lb_intake_board_awards_accepted_total{{{REGION}, {BOARD}}}[{RATE}])) / sum by (leaderboard_region) (rate(lb_intake_awards_accepted_total{{{REGION}}}[{RATE}]))",
                    "{{leaderboard_region}}",
                ),
            ),
        ),
        Graph(
            "Closing for",
            "While the board is CLOSING: time since its close began (a close "
            "takes the marker delay, about 18 s by default, and a poll or two).",
            "s",
            (
                Query(
                    f"max by (leaderboard_region, board) (lb_lifecycle_closing_seconds{{{REGION}, {BOARD}}})",
                    "{{board}} in {{leaderboard_region}}",
                ),
            ),
        ),
    ),
    "The board's region (every board)": (
        Graph(
            "REGIONAL freshness",
            "Freshness of every board of the region (the projector "
            "measures it per transaction, not per board).",
            "s",
            (
                Query(
                    p99("lb_projector_freshness_seconds", "leaderboard_region, region"),
                    "{{region}} in {{leaderboard_region}} p99",
                ),
            ),
        ),
        Graph(
            "Reconciliation by reason",
            "Records of every board set aside; ops/lb reconciliation --board $board lists this board's.",
            "short",
            (
                Query(
                    rate("lb_processor_reconciled_total", "leaderboard_region, reason"),
                    "{{leaderboard_region}} {{reason}}",
                ),
            ),
        ),
        Graph(
            "Gateway latency p99",
            "GraphQL operations of every board, by root fields.",
            "s",
            (
                Query(
                    p99("lb_gateway_operation_seconds", "leaderboard_region, operation"),
                    "{{leaderboard_region}} {{operation}}",
                ),
            ),
        ),
    ),
}


def _panel(graph: Graph) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(graph.title)
        .description(graph.description)
        .unit(graph.unit)
        .datasource(DATASOURCE)
        .height(8)
        .span(12)
        .legend(
            common.VizLegendOptions()
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
            .show_legend(True)
        )
    )
    for i, query in enumerate(graph.queries):
        target = prometheus.Dataquery().expr(query.expr).legend_format(query.legend).ref_id(chr(ord("A") + i))
        panel = panel.with_target(target)
    return panel.repeat(graph.repeat).repeat_direction("h") if graph.repeat else panel


def _label_variable(name: str, label: str, metric: str, multi: bool) -> gd.QueryVariable:
    return (
        gd.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(f"label_values({metric}, {name if name != 'region' else 'leaderboard_region'})")
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(multi)
    )


def _dashboard(uid: str, title: str, rows: dict[str, tuple[Graph, ...]], board: bool) -> gd.Dashboard:
    built = (
        gd.Dashboard(title)
        .uid(uid)
        .tags(["leaderboard"])
        .time("now-1h", "now")
        .refresh("30s")
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .with_variable(gd.DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(_label_variable("region", "Region", "lb_readiness_check", multi=True))
    )
    if board:
        built = built.with_variable(
            _label_variable("board", "Board", "lb_intake_board_awards_accepted_total", multi=False)
        )
    for row, graphs in rows.items():
        built = built.with_row(gd.Row(row))
        for graph in graphs:
            built = built.with_panel(_panel(graph))
    return built


DASHBOARDS = {
    "leaderboard-region-overview.json": _dashboard(
        "leaderboard-region-overview", "Leaderboard: region overview", OVERVIEW, board=False
    ),
    "leaderboard-board.json": _dashboard("leaderboard-board", "Leaderboard: board", BOARD_PANELS, board=True),
}


def render(builder: gd.Dashboard) -> str:
    return json.dumps(builder.build(), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    outputs = {OUT / name: render(builder) for name, builder in DASHBOARDS.items()}
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    unknown = sorted(set(OUT.glob("*.json")) - outputs.keys())
    if "--check" in argv:
        for path in stale:
            print(f"{path} is stale: run .venv/bin/python helm/dashboards.py", file=sys.stderr)
        for path in unknown:
            print(f"{path} is made by no code: remove it", file=sys.stderr)
        return 1 if stale or unknown else 0
    OUT.mkdir(exist_ok=True)
    for path in stale:
        path.write_text(outputs[path])
        print(f"wrote {path}")
    for path in unknown:
        path.unlink()
        print(f"removed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
