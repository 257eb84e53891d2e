"""The README's figure tables, in Markdown, from recorded runs (``ops/bench/report``).

``TABLES`` holds one renderer a benchmark: the lines of its tables from the run's figures, nothing
else (where the run came from is ``provenance``). Absent figures (``null``: nothing was measured)
show as ``-``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ops.bench.record import RecordedRun

Lines = list[str]


def number(value: float | None, spec: str = ",.0f") -> str:
    return "-" if value is None else f"{value:{spec}}"


def ms(value: float | None) -> str:
    """A latency in ms: one decimal under 10 ms, whole ms above."""
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def quantiles(figures: Mapping[str, Any], *names: str) -> str:
    """``p50 / p95 / p99`` (or the quantiles ``names``) of a recorded distribution, in ms."""
    return " / ".join(ms(figures.get(name)) for name in (names or ("p50", "p95", "p99")))


def markdown(header: Sequence[str], rows: Iterable[Sequence[str]]) -> Lines:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def provenance(run: RecordedRun, link: str) -> str:
    """Which run a table came from: its file, command, commit, date, machine and how busy it was."""
    d = run.document
    command = " ".join([f"ops/bench/{run.benchmark}", *d.get("argv", [])])
    started = datetime.fromisoformat(d["started_at"].replace("Z", "+00:00"))
    c, m, load = d["commit"], d["machine"], d.get("load_average", {})
    dirty = " with uncommitted changes" if c.get("dirty") else ""
    memory = m.get("memory_mib", 0) / 1024
    text = (f"Recorded run [`{run.benchmark}/{run.path.name}`]({link}): `{command}`, commit `{c['short']}`{dirty}, "
            f"{started:%Y-%m-%d %H:%M} UTC, {d.get('seconds', 0):,.0f} s; {m.get('cpus')} CPUs "
            f"({m.get('cpu_model') or 'model unknown'}), {memory:.1f} GiB, {m.get('kernel')}, Python {m.get('python')}; "
            f"load average {_load(load.get('start'))} at the start, {_load(load.get('end'))} at the end.")  # fmt: skip
    note = d.get("note")
    return text + (f" Conditions: {note}" if note else "")


def _load(values: Sequence[float] | None) -> str:
    return "-" if not values else f"{values[0]:.1f}"


# ------------------------------------------------------------------ one renderer a benchmark


def pipeline(run: RecordedRun) -> Lines:
    points = run.figures["points"]
    rows = []
    for p in points:
        processes = p["processes"].values()
        cpu = sum(x.get("cpu_percent") or 0 for x in processes)
        per_award = sum(x.get("cpu_ms_per_award") or 0 for x in processes)
        rows.append([number(p["rate"]), number(p["accepted_per_s"]), quantiles(p["ack_ms"]),
                     quantiles(p["freshness_ms"]), number(p["never_visible"]), f"{cpu:.0f}%",
                     number(per_award, ".2f")])  # fmt: skip
    batch = run.settings.get("batch", 1)
    lines = markdown([f"offered awards/s ({batch} a request)", "accepted/s", "ack p50 / p95 / p99 ms",
                      "freshness p50 / p95 / p99 ms", "never visible", "CPU, all processes", "CPU ms per award"],
                     rows)  # fmt: skip
    return [*lines, "", *per_process(points)]


def per_process(points: Sequence[Mapping[str, Any]]) -> Lines:
    """CPU ms per accepted award of each process (load and drain, above idle), a column a rate."""
    last = points[-1]["processes"]
    names = sorted(last, key=lambda n: -(last[n].get("cpu_ms_per_award") or 0))
    rows = [[name, *(number(p["processes"].get(name, {}).get("cpu_ms_per_award"), ".3f") for p in points)]
            for name in names]  # fmt: skip
    return markdown(["CPU ms per accepted award", *(f"at {p['rate']:,}/s" for p in points)], rows)


def regions(run: RecordedRun) -> Lines:
    figures = run.figures
    names, home = figures["regions"], figures["home"]
    other = next(n for n in names if n != home)
    rows = []
    for p in figures["points"]:
        views = p["visibility"]
        regional = {v["accepted_in"]: v["ms"] for v in views if v["accepted_in"] == v["seen_in"]}
        to_home = next(v["ms"] for v in views if v["accepted_in"] == other and v["seen_in"] == home)
        lag = [r["lag_records"]["p99"] for r in p["replicators"].values()]
        lag_text = "-" if not lag or None in lag else f"{_span(lag)} records"
        meets = "yes" if not p["misses"] else "no: " + "; ".join(p["misses"])
        rows.append([number(p["rate"]), number(p["accepted_per_s"]),
                     " / ".join(ms(p["by_region"][n]["ack_ms"]["p99"]) for n in names),
                     " / ".join(ms(regional[n]["p99"]) for n in names), quantiles(to_home), lag_text, meets])  # fmt: skip
    pair = " / ".join(names)
    return markdown(["offered awards/s", "accepted/s", f"ack p99 {pair} ms", f"REGIONAL freshness p99 {pair} ms",
                     f"HOME visibility ({other} -> {home}) p50 / p95 / p99 ms", "replicator lag p99",
                     "meets the targets"], rows)  # fmt: skip


def _span(values: Sequence[float]) -> str:
    low, high = f"{min(values):,.0f}", f"{max(values):,.0f}"
    return low if low == high else f"{low}-{high}"


def reads(run: RecordedRun) -> Lines:
    f = run.figures
    rows = [[f"`{r['read']}`", number(r["graphql_q_per_s"]), number(r["plain_q_per_s"]),
             number(r["ratio"], ".2f") + "x", number(r["cpu_ratio"], ".2f") + "x"] for r in f["reads"]]  # fmt: skip
    lines = markdown(["read", "GraphQL q/s", "plain Starlette q/s", "ratio (q/s)", "ratio (per server CPU second)"],
                     rows)  # fmt: skip
    paced = [r for r in f["runs"] if r["mode"].startswith("paced")]
    if paced:
        lines += ["", *markdown(["GraphQL read, paced", "answered q/s", "latency p50 / p95 / p99 ms"],
                                ([f"`{r['read']}`", number(r["rate"]), quantiles(r["latency_ms"])] for r in paced))]  # fmt: skip
    fan = f.get("fan_out")
    if fan:
        rss = fan["rss_mib"]
        share = fan["deliveries"] / fan["expected"] if fan["expected"] else 0
        lines += ["", f"Fan-out: {fan['subscribers']:,} subscribers, {fan['changes']} top-10 changes: "
                      f"{fan['deliveries']:,} of {fan['expected']:,} TopKChanged delivered ({share:.1%}), delivery "
                      f"p50 / p95 / p99 {quantiles(fan['delivery_ms'])} ms, {fan['resyncs']} resyncs; gateway RSS "
                      f"{number(rss['before'])} MiB before, {number(rss['after'])} MiB after."]  # fmt: skip
    return lines


TABLES: dict[str, Callable[[RecordedRun], Lines]] = {"pipeline": pipeline, "regions": regions, "reads": reads}
