"""The report: the README's blocks rendered from fixture runs, the plots drawn, --check."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ops.bench import report
from ops.bench.kit import Run, by_process, distribution
from ops.bench.load import Reply, Results
from ops.bench.pipeline import Measured
from ops.bench.record import Figures, Recording

PNG = b"\x89PNG\r\n\x1a\n"
README = """# Platform

Some prose.

<!-- bench:pipeline -->
| offered | a stale table pasted by hand |
<!-- /bench:pipeline -->

More prose.

<!-- bench:regions -->
<!-- /bench:regions -->

<!-- bench:reads -->
old
<!-- /bench:reads -->

The end.
"""


def results(acks_ms: list[float], fresh_ms: list[float], batch: int = 10) -> Results:
    r = Results()
    for n, ack in enumerate(acks_ms):
        r.add(Reply(0.0, 0.01 * (n == 2), ack / 1000, 202, batch, "eu", 0, n), batch)  # the last one late
    r.fresh_ms, r.pending = fresh_ms, []  # as ``freshness`` leaves them: every request seen visible
    return r


def pipeline_figures() -> Figures:
    points = []
    for rate, slow in ((500, 1.0), (1000, 3.0)):
        measured = Measured(
            results([10 * slow, 20 * slow, 400 * slow], [0.0, 60 * slow]), wall=10.0, drained=12.0,
            cpu={"intake": 40.0 * slow, "kafka": 20.0, "redis": 0.1}, idle={"intake": 1.0, "kafka": 2.0, "redis": 0.1},
            used={"intake": 4.0 * slow, "kafka": 2.5, "redis": 0.01}, rss={"intake": 90.0, "kafka": 400.0, "redis": 9.0},
        )  # fmt: skip
        points.append(measured.figures(rate, 10.0))
    return {"points": points, "replay": None}


def regions_figures() -> Figures:
    points = []
    for rate in (1000, 2000):
        by_region = {n: results([90.0, 93.0 + rate / 1000], []).figures(10.0) for n in ("eu", "us")}
        views = [("eu", "eu", [600.0, 634.0]), ("us", "us", [600.0, 607.0]), ("us", "eu", [440.0, 908.0])]
        points.append({
            "rate": rate, "seconds": 10.0, "accepted_per_s": rate - 1.0, "by_region": by_region,
            "visibility": [{"label": f"{a} -> {s}", "accepted_in": a, "seen_in": s, "ms": distribution(ms),
                            "never_seen": 0} for a, s, ms in views],
            "replicators": {"eu replicator-us": {"lag_records": distribution([50, 86]), "lag_seconds": distribution([0.2])}},
            "processes": by_process(cpu_percent={"eu intake": 10.0, "kafka-eu": 8.0}, rss_mib={"eu intake": 60.0},
                                    jit_percent={"eu intake": 0.0, "kafka-eu": rate / 1000}),
            "misses": [] if rate == 1000 else ["REGIONAL p99 eu 1200 ms"],
        })  # fmt: skip
    targets = {"ack_p99_ms": 200.0, "regional_p99_ms": 1000.0, "home_p99_ms": 2000.0, "carried": 0.95}
    return {"regions": ["eu", "us"], "home": "eu", "targets": targets, "points": points,
            "idle_cpu_percent": {"kafka-eu": 4.0, "eu processor": 1.0}, "idle_jit_cpu_percent": {"kafka-eu": 1.5}}


def reads_figures() -> Figures:
    def loop(label: str, mode: str, latencies: list[float]) -> dict[str, object]:
        return Run(label, mode, seconds=1.0, latencies=latencies).figures()

    runs = [{**loop("player [graphql]", "closed c=32", [0.02, 0.03]), "side": "graphql", "read": "player", "per_cpu_s": 1200.0},
            {**loop("player [plain]", "closed c=32", [0.01, 0.012]), "side": "plain", "read": "player", "per_cpu_s": 2400.0},
            {**loop("context(4)", "paced 500 q/s", [0.004, 0.0055]), "side": "graphql", "read": "context(4)"}]  # fmt: skip
    reads = [{"read": "player", "graphql_q_per_s": 1282.0, "plain_q_per_s": 2573.0, "ratio": 0.498,
              "graphql_per_cpu_s": 1200.0, "plain_per_cpu_s": 2400.0, "cpu_ratio": 0.5}]  # fmt: skip
    fan_out = {"subscribers": 1000, "changes": 20, "deliveries": 20000, "expected": 20000, "resyncs": 0,
               "delivery_ms": distribution([0.3, 0.7], scale=1000), "rss_mib": {"before": 87.0, "after": 225.0}}  # fmt: skip
    return {"reads": reads, "runs": runs, "fan_out": fan_out}


def record(data: Path, benchmark: str, figures: Figures, *argv: str, **settings: object) -> Path:
    return Recording.start(benchmark, argparse.Namespace(**settings), argv).write(figures, data)


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Path]:
    readme = tmp_path / "README.md"
    readme.write_text(README)
    data = tmp_path / "data"
    record(data, "pipeline", pipeline_figures(), "--rates", "500,1000", batch=10, rates=[500, 1000])
    record(data, "regions", regions_figures(), batch=10, warm_load=120.0, warm_rate=1000)
    record(data, "reads", reads_figures(), players=1000)
    return {"readme": readme, "docs": tmp_path / "docs" / "bench", "data": data}


def options(site: dict[str, Path], *extra: str) -> list[str]:
    return ["--readme", str(site["readme"]), "--docs", str(site["docs"]), "--data", str(site["data"]), *extra]


def block(text: str, name: str) -> str:
    found = re.search(rf"<!-- bench:{name} -->\n(.*?)<!-- /bench:{name} -->", text, re.DOTALL)
    assert found is not None, name
    return found[1]


def test_the_blocks_are_rendered_from_the_newest_runs_and_name_them(site: dict[str, Path]) -> None:
    assert report.main(options(site)) == 0

    text = site["readme"].read_text()
    assert text.startswith("# Platform\n\nSome prose.\n") and "More prose.\n" in text and text.endswith("The end.\n")
    pipeline = block(text, "pipeline")
    assert "stale table" not in pipeline
    [kept] = (site["docs"] / "runs" / "pipeline").glob("*.json")
    assert f"[`pipeline/{kept.name}`](docs/bench/runs/pipeline/{kept.name})" in pipeline
    assert "`ops/bench/pipeline --rates 500,1000`, commit" in pipeline and "load average" in pipeline
    assert "| offered awards/s (10 a request) |" in pipeline
    # 30 awards in 10 s; CPU per award: (4 s used - 1% idle of the 12 s drained) / 30 for the intake
    assert "| 500 | 3 | 33% | 20 / 362 / 392 | 30 / 57 / 59 | 0 | 60% | 204.67 |" in pipeline
    assert "| intake | 129.333 | 396.000 |\n| kafka | 75.333 | 75.333 |\n\n(under 0.005 ms at every rate: redis)" in pipeline
    assert "![ack and freshness percentiles against the offered rate](docs/bench/pipeline-latency.png)" in pipeline
    regions = block(text, "regions")
    assert "| 1,000 | 999 | 94 / 94 | 634 / 607 | 674 / 885 / 903 | 86 records | yes |" in regions
    assert "| 2,000 | 1,999 | 95 / 95 | 634 / 607 | 674 / 885 / 903 | 86 records | no: REGIONAL p99 eu 1200 ms |" in regions
    assert ("Idle (no load): 5% of one core for every process, kafka-eu 4.0%, eu processor 1.0%, the others less. "
            "Of it, 1.5% was the JVMs' JIT compiling code, which fades as it runs out of code to compile: 3.5% "
            "without it.") in regions  # fmt: skip
    assert ("Of the CPU under load, the JVMs' JIT compiling code took (of one core, after 120 s of warm-up load at "
            "1,000/s): 1.0% at 1,000/s, 2.0% at 2,000/s.") in regions  # fmt: skip
    reads = block(text, "reads")
    assert "| `player` | 1,282 | 2,573 | 0.50x | 0.50x |" in reads
    assert "| `context(4)` | 2 | 4.8 / 5.4 / 5.5 |" in reads
    assert "20,000 of 20,000 TopKChanged delivered (100.0%)" in reads


def test_a_run_recorded_before_the_jit_was_measured_says_nothing_of_it(site: dict[str, Path]) -> None:
    figures = regions_figures()
    del figures["idle_jit_cpu_percent"]
    for point in figures["points"]:
        for process in point["processes"].values():
            del process["jit_percent"]
    newer = record(site["data"], "regions", figures, batch=10)
    newer.rename(newer.with_name("29991231T235959Z-abcdef0.json"))
    report.main(options(site))

    regions = block(site["readme"].read_text(), "regions")
    assert "Idle (no load): 5% of one core for every process" in regions and "JIT" not in regions


def test_the_plots_are_png_files_next_to_the_runs(site: dict[str, Path]) -> None:
    report.main(options(site))
    for name in ("pipeline-latency", "pipeline-cpu", "regions-latency", "reads-latency"):
        assert (site["docs"] / f"{name}.png").read_bytes().startswith(PNG), name


def test_a_newer_run_replaces_the_one_kept_and_check_then_passes(site: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    report.main(options(site))
    [first] = (site["docs"] / "runs" / "reads").glob("*.json")
    figures = reads_figures()
    figures["reads"][0]["graphql_q_per_s"] = 1500.0
    newer = record(site["data"], "reads", figures, players=1000)
    newer = newer.rename(newer.with_name("29991231T235959Z-abcdef0.json"))
    report.main(options(site))

    assert [p.name for p in (site["docs"] / "runs" / "reads").glob("*.json")] == [newer.name] != [first.name]
    assert "| `player` | 1,500 |" in block(site["readme"].read_text(), "reads")
    capsys.readouterr()
    assert report.main(options(site, "--check")) == 0
    assert "matches its recorded run" in capsys.readouterr().out


def test_check_names_a_stale_block_and_a_missing_plot(site: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    report.main(options(site))
    text = site["readme"].read_text()
    site["readme"].write_text(text.replace("| `player` | 1,282 |", "| `player` | 1,999 |"))
    (site["docs"] / "pipeline-cpu.png").unlink()
    capsys.readouterr()

    assert report.main(options(site, "--check")) == 1
    err = capsys.readouterr().err
    assert "bench:reads: the block differs from what docs/bench/runs/reads/" in err and "run ops/bench/report" in err
    assert "bench:pipeline: the plot docs/bench/pipeline-cpu.png is missing" in err
    assert "bench:regions" not in err


def test_check_fails_on_a_block_that_names_no_run(site: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(options(site, "--check")) == 1
    assert "bench:pipeline: the block names no recorded run" in capsys.readouterr().err


def test_a_benchmark_without_a_run_keeps_its_block_and_a_readme_without_markers_is_told(
    site: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for run in (site["data"] / "reads").glob("*.json"):
        run.unlink()
    site["readme"].write_text(README.replace("<!-- bench:regions -->\n<!-- /bench:regions -->\n", ""))
    report.main(options(site))

    out = capsys.readouterr().out
    assert "== reads: no recorded run" in out
    assert "has no <!-- bench:regions --> ... <!-- /bench:regions --> block" in out
    text = site["readme"].read_text()
    assert block(text, "reads") == "old\n" and "bench:regions" not in text
    assert (site["docs"] / "regions-latency.png").exists()


def test_the_readme_tables_are_what_their_recorded_runs_render() -> None:
    """The README's bench blocks match the runs in docs/bench (run ops/bench/report after a run)."""
    assert report.problems(report.README, report.DOCS) == []
    assert re.findall(r"<!-- bench:([\w-]+) -->", report.README.read_text())  # the check checks something
