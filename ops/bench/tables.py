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
LEAST_MS = 0.005  # CPU ms per award under which a process is left out of the per-process table


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
        late = p["late_requests"] / p["ack_ms"]["count"] if p["ack_ms"]["count"] else 0
        rows.append([number(p["rate"]), number(p["accepted_per_s"]), f"{late:.0%}", quantiles(p["ack_ms"]),
                     quantiles(p["freshness_ms"]), number(p["never_visible"]), f"{cpu:.0f}%",
                     number(per_award, ".2f")])  # fmt: skip
    batch = run.settings.get("batch", 1)
    lines = markdown([f"offered awards/s ({batch} a request)", "accepted/s", "requests sent late",
                      "ack p50 / p95 / p99 ms", "freshness p50 / p95 / p99 ms", "never visible",
                      "CPU, all processes", "CPU ms per award"], rows)  # fmt: skip
    return [*lines, "", *per_process(points)]


def per_process(points: Sequence[Mapping[str, Any]]) -> Lines:
    """CPU ms per accepted award of each process (load and drain, above idle), a column a rate; the
    processes under ``LEAST_MS`` at every rate are left out, and said to be."""
    used = {name: [p["processes"].get(name, {}).get("cpu_ms_per_award") or 0.0 for p in points]
            for point in points for name in point["processes"]}  # fmt: skip
    names = sorted((n for n, v in used.items() if max(v) >= LEAST_MS), key=lambda n: (-sum(used[n]), n))
    rows = [[name, *(number(v, ".3f") for v in used[name])] for name in names]
    lines = markdown(["CPU ms per accepted award", *(f"at {p['rate']:,}/s" for p in points)], rows)
    left = sorted(set(used) - set(names))
    return lines + (["", f"(under {LEAST_MS} ms at every rate: {', '.join(left)})"] if left else [])


def _accepted(region: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ack times of a region's accepted awards (runs recorded before refusals were timed apart:
    every answer's, which were then all acceptances)."""
    found: Mapping[str, Any] = region.get("accepted_ms") or region["ack_ms"]
    return found


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
                     " / ".join(ms(_accepted(p["by_region"][n])["p99"]) for n in names),
                     " / ".join(ms(regional[n]["p99"]) for n in names), quantiles(to_home), lag_text, meets])  # fmt: skip
    pair = " / ".join(names)
    lines = markdown(["offered awards/s", "accepted/s", f"accepted ack p99 {pair} ms", f"REGIONAL freshness p99 {pair} ms",
                      f"HOME visibility ({other} -> {home}) p50 / p95 / p99 ms", "replicator lag p99",
                      "meets the targets"], rows)  # fmt: skip
    if all("cpu_ms_per_award" in x for p in figures["points"] for x in p["processes"].values()):
        lines += ["", *per_process(figures["points"])]
    lines += _compiling(figures["points"], run.settings)
    return (lines + _idle(figures.get("idle_cpu_percent"), figures.get("idle_jit_cpu_percent"))
            + _overload(figures.get("overload")))  # fmt: skip


def _compiling(points: Sequence[Mapping[str, Any]], settings: Mapping[str, Any]) -> Lines:
    """How much of each load's CPU the JVMs spent compiling code, after which warm-up (runs recorded
    before it was measured do not say)."""
    if not all("jit_percent" in x for p in points for x in p["processes"].values()):
        return []
    shares = ", ".join(
        f"{sum(x['jit_percent'] for x in p['processes'].values()):.1f}% at {p['rate']:,}/s" for p in points
    )
    rate, seconds = settings.get("warm_rate") or points[0]["rate"], settings.get("warm_load") or 0
    warm = f"after {seconds:.0f} s of warm-up load at {rate:,}/s" if seconds else "with no warm-up load"
    return ["", f"Of the CPU under load, the JVMs' JIT compiling code took (of one core, {warm}): {shares}."]


def _idle(idle: Mapping[str, float] | None, compiling: Mapping[str, float] | None) -> Lines:
    """Each process's CPU with no load, the largest first, and their sum; and how much of it the JVMs
    spent compiling code (runs recorded before it was measured do not say)."""
    if not idle:
        return []
    largest = sorted(idle.items(), key=lambda kv: -kv[1])
    parts = ", ".join(f"{name} {percent:.1f}%" for name, percent in largest[:4])
    line = f"Idle (no load): {sum(idle.values()):.0f}% of one core for every process, {parts}, the others less."
    if compiling is not None:
        jit = sum(compiling.values())
        line += (f" Of it, {jit:.1f}% was the JVMs' JIT compiling code, which fades as it runs out of code to compile:"
                 f" {sum(idle.values()) - jit:.1f}% without it.")  # fmt: skip
    return ["", line]


def _overload(overload: Mapping[str, Any] | None) -> Lines:
    """The verdict at 2R: accepted and refused answers' latency, goodput, and each check."""
    if not overload:
        return []
    rate = overload["rate"]
    checks = "; ".join(f"{name}: {'met' if ok else 'missed'}" for name, ok in overload["checks"].items())
    rows = [[number(2 * rate), number(rate), f"{overload['goodput_share']:.0%}",
             f"{number(overload['accepted_ms']['count'])}: {quantiles(overload['accepted_ms'])}",
             f"{number(overload['refused_ms']['count'])}: {quantiles(overload['refused_ms'])}", checks]]  # fmt: skip
    return ["", *markdown(["overload: offered awards/s (2R)", "R", "goodput, share of R",
                           "accepted: count, ack p50 / p95 / p99 ms", "refused 503: count, p50 / p95 / p99 ms",
                           "checks"], rows)]  # fmt: skip


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


def applied(run: RecordedRun) -> Lines:
    f = run.figures
    plain, waited = f["plain"], f["wait_applied"]

    def row(label: str, r: Mapping[str, Any], answered: str) -> list[str]:
        refused = sum(r["rejected"].values())
        return [label, quantiles(r["ack_ms"]), number(r["accepted_per_s"]), number(refused), number(r["late_requests"]),
                answered]  # fmt: skip

    ratio = " / ".join(_ratio(waited["ack_ms"].get(q), plain["ack_ms"].get(q)) for q in ("p50", "p95", "p99"))
    rows = [row("plain", plain, ""), row("`wait=applied`", waited, f"{waited['applied']:,} of {waited['accepted']:,}"),
            ["ratio (wait / plain)", ratio, "", "", "", ""]]  # fmt: skip
    return markdown(["phase", "ack p50 / p95 / p99 ms", "accepted/s", "refused requests", "requests sent late",
                     "awards answered with `applied`"], rows)  # fmt: skip


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def close(run: RecordedRun) -> Lines:
    f = run.figures
    rows = [[number(f["players"]), f"{f['seconds']:.1f} s", number(f["players_per_s"]),
             f"{f['rows']:,} ({f['chunks']:,} chunks of {f['chunk_size']:,} + header)", f"{f['chunk_bytes'] / 1e6:.1f} MB",
             f"{ms(f['page_ms'])} ms", f"{f['again_chunks_written']} chunks written in {ms(f['again_ms'])} ms"]]  # fmt: skip
    return markdown(["players", "archive", "players/s", "Cassandra rows", "chunk blobs", "page of 100 from the middle",
                     "archived again (a restarted worker)"], rows)  # fmt: skip


def restore(run: RecordedRun) -> Lines:
    f, players = run.figures, run.settings["players"]
    plain, cold, warm = f["plain_read"], f["cold"], f["warm"]
    cold_text = (f"{cold['seconds']:.1f} s, {cold['records_per_s']:,.0f} records/s ({cold['of_plain_read']:.2f}x the "
                 f"plain read; in CPU seconds {_ratio(plain['cpu_s'], cold['cpu_s'])})")  # fmt: skip
    rows = [[f"{players:,} ({f['records']:,})", f"{plain['records_per_s']:,.0f} records/s", cold_text,
             f"{warm['tail_records']:,} records in {warm['seconds']:.2f} s", f"{f['store_bytes_per_player']:,.0f} B",
             f"{f['peak_rss_mib']:,.0f} MiB (cache {run.settings['cache_mib']} MiB)"]]  # fmt: skip
    return markdown(["players (changelog records)", "plain read", "cold takeover", "warm takeover",
                     "store on disk per player", "peak RSS"], rows)  # fmt: skip


def replicate(run: RecordedRun) -> Lines:
    steady, backlog = run.figures["steady"], run.figures["backlog"]
    rows = [[number(run.settings["rate"]), number(steady["copied_per_s"]), quantiles(steady["lag_ms"]),
             number(steady["cpu_cores"].get("replicator"), ".2f"),
             f"{backlog['awards']:,} in {backlog['seconds']:.1f} s: {backlog['records_per_s']:,.0f} records/s",
             number(backlog["cpu_cores"].get("replicator"), ".2f")]]  # fmt: skip
    return markdown(["offered awards/s in us", "copied records/s", "replication lag p50 / p95 / p99 ms",
                     "replicator CPU (cores)", "backlog drained by a restarted replicator",
                     "its CPU (cores)"], rows)  # fmt: skip


def windows(run: RecordedRun) -> Lines:
    f = run.figures
    rows = [[phase, quantiles(r["ack_ms"], "p50", "p99"), quantiles(r["freshness_ms"], "p50", "p99"),
             number(r["accepted"]), number(sum(r["rejected"].values()))]
            for phase, r in (("before the expiry", f["before"]), ("during it", f["during"]))]  # fmt: skip
    lines = markdown(["awards at " + f"{run.settings['rate']:,}/s", "ack p50 / p99 ms", "freshness p50 / p99 ms",
                      "accepted", "refused requests"], rows)  # fmt: skip
    return [*lines, "", f"The expiry took {f['expiry_s']:.2f} s (markers written -> every partition's projection "
            f"past them) and rewrote {f['totals_rewritten']:,.0f} totals (players with points on that day: "
            f"{f['players_on_expired_day']:,}; on the board: {run.settings['players']:,})."]  # fmt: skip


TABLES: dict[str, Callable[[RecordedRun], Lines]] = {
    "pipeline": pipeline, "regions": regions, "reads": reads, "applied": applied, "close": close,
    "restore": restore, "replicate": replicate, "windows": windows,
}  # fmt: skip
