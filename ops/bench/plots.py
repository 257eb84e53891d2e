"""PNG plots of recorded runs (``ops/bench/report``), drawn with matplotlib's Agg backend (no display).

``PLOTS`` names, for each benchmark, its plots: a file name (``<benchmark>-<plot>.png``), the alt
text the README gives it and the function that draws it from the run:

- ``pipeline``: ack and freshness p50/p95/p99 against the offered rate; CPU ms per accepted award
  of each process at each rate;
- ``regions``: ack, REGIONAL freshness and HOME visibility percentiles against the offered rate,
  with the targets;
- ``reads``: latency p50/p95/p99 of each read, closed loop and paced.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, SymmetricalLogLocator

from ops.bench.record import RecordedRun

QUANTILE_STYLES = {"p50": ":", "p95": "--", "p99": "-"}
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
          "tab:olive", "tab:cyan")  # fmt: skip
MOST_PROCESSES = 8  # in the CPU plot; the rest together as "others"
SUBS = (1.0, 2.0, 5.0)  # ticks of a decade


def _value(figure: Any) -> float:
    return math.nan if figure is None else float(figure)


def _plain_ticks(axis: Any, locator: Any) -> None:
    """Ticks at 1, 2 and 5 of each decade, labelled as plain numbers (``20``, not ``2 x 10^1``)."""
    axis.set_major_locator(locator)
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=100, metadata={"Software": None})


@dataclass(frozen=True, slots=True)
class Panel:
    """One plot of latency against the offered rate: a distribution a rate for each series."""

    title: str
    series: Mapping[str, Sequence[Mapping[str, Any]]]  # label ("" for one) -> a distribution a rate
    target_ms: float | None = None


def against_rate(rates: Sequence[float], panels: Sequence[Panel], title: str, path: Path) -> None:
    """Side by side, each panel's p50 (dotted), p95 (dashed) and p99 (solid) against the offered
    rate, ms on a log scale (linear under 1 ms, so 0, visible already when acknowledged, shows); a
    series a colour; the target (p99), when there is one, in grey."""
    figure = Figure(figsize=(5.0 * len(panels), 4.2), layout="constrained")
    for axes, panel in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels, strict=True):
        for color, (label, distributions) in zip(COLORS, panel.series.items(), strict=False):
            for name, style in QUANTILE_STYLES.items():
                values = [_value(d.get(name)) for d in distributions]
                axes.plot(rates, values, style, marker="o", color=color, label=f"{label} {name}".strip())
        if panel.target_ms is not None:
            axes.axhline(panel.target_ms, color="gray", linewidth=1, label=f"target p99 {panel.target_ms:,.0f} ms")
        axes.set(title=panel.title, xlabel="offered awards/s", ylabel="ms", xticks=list(rates))
        axes.set_yscale("symlog", linthresh=1.0, linscale=0.3)
        axes.set_ylim(bottom=0)
        _plain_ticks(axes.yaxis, SymmetricalLogLocator(base=10, linthresh=1.0, subs=SUBS))
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize="small")
    figure.suptitle(title)
    _save(figure, path)


def pipeline_latency(run: RecordedRun, path: Path) -> None:
    points = run.figures["points"]
    panels = [Panel("ack (scheduled -> 202)", {"": [p["ack_ms"] for p in points]}),
              Panel("freshness (ack -> visible in Redis)", {"": [p["freshness_ms"] for p in points]})]  # fmt: skip
    batch = run.settings.get("batch", 1)
    against_rate([p["rate"] for p in points], panels, f"pipeline, {batch} award(s) a request", path)


def pipeline_cpu(run: RecordedRun, path: Path) -> None:
    """A stacked bar a rate: each process's CPU ms per accepted award (load and drain, above idle);
    the processes that used the most over all rates, the rest together as "others"."""
    points = run.figures["points"]
    per_award = [{n: _value(x.get("cpu_ms_per_award")) for n, x in p["processes"].items()} for p in points]
    per_award = [{n: 0.0 if math.isnan(v) else v for n, v in x.items()} for x in per_award]
    names = {n for x in per_award for n in x}
    ranked = sorted(names, key=lambda n: (-sum(x.get(n, 0.0) for x in per_award), n))
    shown, rest = ranked[:MOST_PROCESSES], ranked[MOST_PROCESSES:]
    figure = Figure(figsize=(8.0, 4.6), layout="constrained")
    axes = figure.subplots()
    labels = [f"{p['rate']:,}/s" for p in points]
    bottom = [0.0] * len(points)
    for color, group in zip(COLORS, [*([n] for n in shown), *([rest] if rest else [])], strict=False):
        heights = [sum(x.get(n, 0.0) for n in group) for x in per_award]
        axes.bar(labels, heights, bottom=bottom, color=color, label=group[0] if len(group) == 1 else "others")
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    axes.set(title="CPU ms per accepted award, by process (load and drain, above idle)",
             xlabel="offered awards/s", ylabel="CPU ms per award")  # fmt: skip
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(figure, path)


def regions_latency(run: RecordedRun, path: Path) -> None:
    f = run.figures
    names, home, targets = f["regions"], f["home"], f["targets"]
    other = next(n for n in names if n != home)
    points = f["points"]

    def view(accepted_in: str, seen_in: str) -> list[Mapping[str, Any]]:
        return [next(v["ms"] for v in p["visibility"] if v["accepted_in"] == accepted_in and v["seen_in"] == seen_in)
                for p in points]  # fmt: skip

    panels = [
        Panel("ack", {n: [p["by_region"][n]["ack_ms"] for p in points] for n in names}, targets["ack_p99_ms"]),
        Panel("REGIONAL freshness", {n: view(n, n) for n in names}, targets["regional_p99_ms"]),
        Panel(f"HOME visibility ({other} -> {home})", {"": view(other, home)}, targets["home_p99_ms"]),
    ]
    against_rate([p["rate"] for p in points], panels, f"two regions ({', '.join(names)}) on one machine", path)


def reads_latency(run: RecordedRun, path: Path) -> None:
    """A group of bars a read (and side and mode): p50, p95, p99 ms, medians over the repeated runs."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in run.figures["runs"]:
        groups.setdefault(f"{r['read']} [{r['side']}, {r['mode']}]", []).append(r["latency_ms"])
    labels = list(groups)
    figure = Figure(figsize=(9.0, 1.0 + 0.45 * len(labels)), layout="constrained")
    axes = figure.subplots()
    height = 0.8 / len(QUANTILE_STYLES)
    for i, (name, color) in enumerate(zip(QUANTILE_STYLES, COLORS, strict=False)):
        values = [statistics.median(_value(d.get(name)) for d in groups[label]) for label in labels]
        axes.barh([k + i * height for k in range(len(labels))], values, height=height, color=color, label=name)
    axes.set_yticks([k + height for k in range(len(labels))], labels, fontsize="small")
    axes.invert_yaxis()
    axes.set(title="read latency by query (medians of the runs)", xlabel="ms", xscale="log")
    _plain_ticks(axes.xaxis, LogLocator(subs=SUBS))
    axes.grid(True, axis="x", which="both", alpha=0.3)
    axes.legend(fontsize="small")
    _save(figure, path)


@dataclass(frozen=True, slots=True)
class Plot:
    name: str  # the file is <benchmark>-<name>.png
    alt: str
    draw: Callable[[RecordedRun, Path], None]


PLOTS: dict[str, list[Plot]] = {
    "pipeline": [Plot("latency", "ack and freshness percentiles against the offered rate", pipeline_latency),
                 Plot("cpu", "CPU ms per accepted award of each process", pipeline_cpu)],
    "regions": [Plot("latency", "ack, REGIONAL freshness and HOME visibility percentiles against the offered rate",
                     regions_latency)],
    "reads": [Plot("latency", "read latency by query", reads_latency)],
}  # fmt: skip
