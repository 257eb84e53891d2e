"""What the chart's alerts and dashboards query: the rendered PrometheusRule and every panel's
expressions, and the Prometheus binaries of the Debian package (``ops/test`` installs it)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.helm.chart import CHART, render

EU = CHART / "ci" / "eu-values.yaml"
DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))


def binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise AssertionError(f"{name} is not installed: apt-get install prometheus (ops/test installs it)")
    return found


def rule_groups(*sets: str) -> list[dict[str, Any]]:
    """``spec.groups`` of the PrometheusRule the eu values render with the alerts on."""
    rule = render(EU, sets=["alerts.enabled=true", *sets]).of_kind("PrometheusRule")
    if len(rule) != 1:
        raise AssertionError(f"expected one PrometheusRule, found {len(rule)}")
    groups: list[dict[str, Any]] = rule[0]["spec"]["groups"]
    return groups


def alerts(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for g in groups for r in g["rules"] if "alert" in r]


@dataclass(frozen=True, slots=True)
class PanelQuery:
    dashboard: str
    panel: str
    expr: str


def panel_queries() -> Iterator[PanelQuery]:
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets") or []:
                yield PanelQuery(path.stem, panel["title"], target["expr"])


def metric_names(expr: str) -> set[str]:
    """Metric names an expression reads: the dashboards and rules write every selector with braces
    (``redis_db_keys{}``), so a name is what stands right before ``{``."""
    return set(re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", expr))
