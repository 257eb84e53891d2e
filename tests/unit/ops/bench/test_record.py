"""The recorder every benchmark writes its run with: the file, its fields, and reading it back."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from ops.bench.kit import Run, by_process, distribution
from ops.bench.record import ROOT, jsonable, newest, read_run, recorded, runs_of


def test_a_run_is_written_with_machine_commit_settings_and_figures(tmp_path: Path) -> None:
    figures = {"points": [{"rate": 500, "ack_ms": distribution([0.001, 0.002, 0.004], scale=1000)}]}
    path = recorded("pipeline", argparse.Namespace(rate=500, batch=1), lambda: figures, runs=tmp_path)

    assert path is not None and path.parent == tmp_path / "pipeline"
    document = json.loads(path.read_text())
    assert path.name == f"{document['started_at'].replace('-', '').replace(':', '')}-{document['commit']['short']}.json"
    assert document["benchmark"] == "pipeline" and document["format"] == 1
    assert document["settings"] == {"rate": 500, "batch": 1}
    assert document["machine"]["cpus"] >= 1 and document["machine"]["python"].startswith("3.")
    assert document["machine"]["memory_mib"] > 0 and document["machine"]["kernel"]
    assert len(document["commit"]["sha"]) == 40 and isinstance(document["commit"]["dirty"], bool)
    assert document["started_at"] <= document["ended_at"]
    assert len(document["load_average"]["start"]) == 3 and len(document["load_average"]["end"]) == 3
    assert document["figures"]["points"][0]["ack_ms"] == {"count": 3, "p50": 2.0, "p95": 3.8, "p99": 3.96, "max": 4.0}


def test_a_recorded_run_reads_back_as_written(tmp_path: Path) -> None:
    loop = Run("top", "paced 10 q/s", seconds=2.0, latencies=[0.001, 0.003])
    figures = {"run": loop.figures(), "processes": by_process(cpu_percent={"intake": 40.0}, rss_mib={"intake": 80.0})}
    path = recorded("reads", argparse.Namespace(players=10), lambda: figures, runs=tmp_path)

    assert path is not None
    run = read_run(path)
    assert run.benchmark == "reads" and run.settings == {"players": 10}
    assert run.figures == jsonable(figures)
    assert run.figures["run"]["rate"] == 1.0 and run.figures["run"]["latency_ms"]["p50"] == pytest.approx(2.0)
    assert run.figures["processes"] == {"intake": {"cpu_percent": 40.0, "rss_mib": 80.0}}


def test_nothing_measured_is_null_and_nothing_returned_records_nothing(tmp_path: Path) -> None:
    path = recorded("close", argparse.Namespace(), lambda: {"empty": distribution([]), "nan": math.nan}, runs=tmp_path)
    assert path is not None
    figures = read_run(path).figures
    assert figures == {"empty": {"count": 0, "p50": None, "p95": None, "p99": None, "max": None}, "nan": None}
    assert recorded("scale", argparse.Namespace(clean=True), lambda: None, runs=tmp_path) is None
    assert not (tmp_path / "scale").exists()


def test_figures_that_are_not_numbers_text_lists_or_mappings_are_refused() -> None:
    with pytest.raises(TypeError, match=r"\(object\) cannot be recorded: give numbers"):
        jsonable({"x": object()})
    assert jsonable({200: (1, 2), "path": ROOT / "x", "inf": math.inf}) == {
        "200": [1, 2], "path": str(ROOT / "x"), "inf": None
    }  # fmt: skip


def test_a_file_that_is_not_a_run_is_named_with_what_it_lacks(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"format": 1, "benchmark": "reads"}))
    with pytest.raises(ValueError, match=r"x\.json: not a recorded run, it lacks started_at, commit"):
        read_run(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        read_run(bad)


def test_the_newest_run_is_the_latest_start_over_every_folder(tmp_path: Path) -> None:
    for folder, name in [("a", "20260101T000000Z-aaaaaaa"), ("b", "20260301T000000Z-bbbbbbb"), ("a", "20260201T000000Z-ccccccc")]:
        (tmp_path / folder / "reads").mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "reads" / f"{name}.json").write_text("{}")
    assert [p.name[:8] for p in runs_of("reads", tmp_path / "a", tmp_path / "b")] == ["20260101", "20260201", "20260301"]
    assert newest("reads", tmp_path / "a") == tmp_path / "a" / "reads" / "20260201T000000Z-ccccccc.json"
    assert newest("pipeline", tmp_path / "a") is None
