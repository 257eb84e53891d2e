"""Dashboards and alerts render only when asked for, with the labels Grafana's sidecar and the
Prometheus operator select on; the committed dashboards are the generator's output."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helm.chart import ROOT, render
from tests.observability.rules import DASHBOARDS, EU


def test_the_committed_dashboards_are_generated_from_the_current_code() -> None:
    done = subprocess.run(
        [sys.executable, ROOT / "helm" / "dashboards.py", "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_no_dashboard_or_rule_by_default() -> None:
    kinds = {m["kind"] for m in render(EU).manifests()}
    assert "PrometheusRule" not in kinds
    assert "ConfigMap" not in kinds


def test_dashboards_render_as_configmaps_with_the_sidecar_label() -> None:
    maps = render(EU, sets=["dashboards.enabled=true"]).of_kind("ConfigMap")
    assert len(maps) == len(DASHBOARDS) == 2
    for m in maps:
        assert m["metadata"]["labels"]["grafana_dashboard"] == "1"
        ((name, text),) = m["data"].items()
        assert json.loads(text) == json.loads(
            (ROOT / "helm" / "leaderboard" / "dashboards" / name).read_text()
        )


def test_the_sidecar_label_namespace_and_annotations_are_values() -> None:
    sets = [
        "dashboards.enabled=true",
        "dashboards.label=my_dashboards",
        "dashboards.labelValue=yes",
        "dashboards.namespace=monitoring",
        "dashboards.annotations.grafana_folder=Leaderboard",
    ]
    for m in render(EU, sets=sets).of_kind("ConfigMap"):
        assert m["metadata"]["labels"]["my_dashboards"] == "yes"
        assert "grafana_dashboard" not in m["metadata"]["labels"]
        assert m["metadata"]["namespace"] == "monitoring"
        assert m["metadata"]["annotations"] == {"grafana_folder": "Leaderboard"}


def test_the_rule_renders_with_its_selector_labels() -> None:
    rendered = render(EU, sets=["alerts.enabled=true", "alerts.labels.release=kube-prometheus-stack"])
    rule = rendered.named("PrometheusRule", "lb-leaderboard")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert rule["spec"]["groups"][0]["name"] == "leaderboard-eu"


def test_the_service_monitor_labels_every_target_with_region_and_component() -> None:
    monitor = render(EU, sets=["metrics.serviceMonitor.enabled=true"]).named(
        "ServiceMonitor", "lb-leaderboard"
    )
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["honorLabels"] is True
    targets = {r["targetLabel"]: r["sourceLabels"] for r in endpoint["relabelings"]}
    assert targets == {
        "leaderboard_region": ["__meta_kubernetes_service_label_leaderboard_region"],
        "component": ["__meta_kubernetes_service_label_app_kubernetes_io_component"],
    }
