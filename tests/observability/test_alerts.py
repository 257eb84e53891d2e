"""The chart's alerts are valid rules, and each one fires on a region in trouble and stays silent on
a healthy one (``promtool test rules`` on the rendered PrometheusRule's groups)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.helm.chart import ROOT
from tests.observability.rules import alerts, binary, rule_groups

HERE = Path(__file__).parent
RUNBOOKS = ROOT / "ops" / "runbooks"


def _rules_file(tmp_path: Path) -> Path:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
    shutil.copy(HERE / "alerts.test.yaml", tmp_path / "alerts.test.yaml")
    return rules


def test_the_rendered_rules_pass_promtool_check(tmp_path: Path) -> None:
    done = subprocess.run(
        [binary("promtool"), "check", "rules", _rules_file(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_fires_in_trouble_and_not_when_healthy(tmp_path: Path) -> None:
    _rules_file(tmp_path)
    done = subprocess.run(
        [binary("promtool"), "test", "rules", tmp_path / "alerts.test.yaml"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_unit_tests_cover_every_alert_both_ways() -> None:
    names = {a["alert"] for a in alerts(rule_groups())}
    tests = yaml.safe_load((HERE / "alerts.test.yaml").read_text())["tests"]
    firing = {c["alertname"] for c in tests[0]["alert_rule_test"] if c["exp_alerts"]}
    silent = {c["alertname"] for c in tests[1]["alert_rule_test"] if not c["exp_alerts"]}
    assert firing == names
    assert silent == names


def test_every_alert_has_a_severity_a_summary_and_an_existing_runbook() -> None:
    for alert in alerts(rule_groups()):
        assert alert["labels"]["severity"] in {"warning", "critical"}, alert["alert"]
        assert alert["annotations"]["summary"], alert["alert"]
        url = alert["annotations"]["runbook_url"]
        assert url.startswith("ops/runbooks/"), url
        assert (ROOT / url).is_file(), url


def test_thresholds_and_the_runbook_prefix_are_values() -> None:
    groups = rule_groups(
        "alerts.thresholds.closingSeconds=42", "alerts.runbookBaseUrl=https://runbooks.example.net/lb/"
    )
    stuck = next(a for a in alerts(groups) if a["alert"] == "LeaderboardBoardStuckClosing")
    assert stuck["expr"].endswith("> 42")
    assert stuck["annotations"]["runbook_url"] == "https://runbooks.example.net/lb/close-and-correct.md"
    assert all('leaderboard_region="eu"' in a["expr"] for a in alerts(groups))
