"""The README's figure tables and plots, from recorded benchmark runs.

Every ``ops/bench/*`` run is recorded under ``.data/bench/<benchmark>/`` (``ops.bench.record``).
For each benchmark with a table (``ops.bench.tables``), this takes its newest run (or the one given
with ``--run``), copies it to ``docs/bench/runs/<benchmark>/`` (the one run the README shows; an
earlier copy there is removed), draws its plots into ``docs/bench/<benchmark>-<plot>.png``
(``ops.bench.plots``) and rewrites the README between ``<!-- bench:<benchmark> -->`` and
``<!-- /bench:<benchmark> -->``: which run it is (file, command, commit, date, machine, load), its
tables and its plots. A benchmark without a run keeps its block as it is; a README without the
markers of a benchmark is told so.

``--check`` changes nothing: every block of the README must be what its named run (the copy in
docs/bench/runs) renders, and its plots must exist. Run as ``ops/bench/report``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ops.bench.kit import parser
from ops.bench.plots import PLOTS
from ops.bench.record import ROOT, RUNS, RecordedRun, newest, read_run
from ops.bench.tables import TABLES, provenance

DOCS = ROOT / "docs" / "bench"
README = ROOT / "README.md"


def _block_pattern(benchmark: str = r"[\w-]+") -> re.Pattern[str]:
    return re.compile(rf"<!-- bench:(?P<name>{benchmark}) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->", re.DOTALL)


def _link(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path, base)).as_posix()


def plot_path(docs: Path, benchmark: str, name: str) -> Path:
    return docs / f"{benchmark}-{name}.png"


def block(run: RecordedRun, readme: Path, docs: Path) -> str:
    """The README's block for ``run`` (a copy under ``docs``): where it came from, tables, plots."""
    base = readme.parent
    lines = [provenance(run, _link(run.path, base)), "", *TABLES[run.benchmark](run)]
    for plot in PLOTS.get(run.benchmark, []):
        lines += ["", f"![{plot.alt}]({_link(plot_path(docs, run.benchmark, plot.name), base)})"]
    return "\n".join(lines) + "\n"


def replace_block(text: str, benchmark: str, body: str) -> str | None:
    """``text`` with the block of ``benchmark`` holding ``body``; None when it has no such block."""
    pattern = _block_pattern(re.escape(benchmark))
    if not pattern.search(text):
        return None
    return pattern.sub(lambda m: f"<!-- bench:{benchmark} -->\n{body}<!-- /bench:{benchmark} -->", text, count=1)


def keep(run: RecordedRun, docs: Path) -> RecordedRun:
    """The run copied to ``docs/runs/<benchmark>/``, the only run kept there."""
    folder = docs / "runs" / run.benchmark
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / run.path.name
    if run.path.resolve() != kept.resolve():
        shutil.copyfile(run.path, kept)
    for other in folder.glob("*.json"):
        if other.name != kept.name:
            other.unlink()
    return read_run(kept)


def chosen_runs(given: Sequence[Path]) -> dict[str, Path]:
    """The runs given with --run, by benchmark; a SystemExit naming one that has no table."""
    found = {}
    for path in given:
        run = read_run(path)
        if run.benchmark not in TABLES:
            raise SystemExit(f"--run {path}: a run of {run.benchmark}, which has no table; "
                             f"those with one: {', '.join(TABLES)}")  # fmt: skip
        found[run.benchmark] = path
    return found


def render(args: argparse.Namespace) -> int:
    readme, docs = Path(args.readme), Path(args.docs)
    text = readme.read_text()
    given = chosen_runs([Path(p) for p in args.run])
    for benchmark in TABLES:
        path = given.get(benchmark) or newest(benchmark, Path(args.data), docs / "runs")
        if path is None:
            print(f"== {benchmark}: no recorded run (ops/bench/{benchmark} records one); its block is left as it is")
            continue
        run = keep(read_run(path), docs)
        print(f"== {benchmark}: run {_link(run.path, readme.parent)}", flush=True)
        for plot in PLOTS.get(benchmark, []):
            target = plot_path(docs, benchmark, plot.name)
            plot.draw(run, target)
            print(f"   plot {_link(target, readme.parent)}", flush=True)
        replaced = replace_block(text, benchmark, block(run, readme, docs))
        if replaced is None:
            print(f"   {readme.name} has no <!-- bench:{benchmark} --> ... <!-- /bench:{benchmark} --> block: "
                  "add one where its table belongs, then run this again")  # fmt: skip
            continue
        text = replaced
        print(f"   table in {readme.name} (between <!-- bench:{benchmark} --> and its end)")
    if text != readme.read_text():
        readme.write_text(text)
        print(f"== {readme.name} rewritten")
    else:
        print(f"== {readme.name} unchanged")
    return 0


def problems(readme: Path, docs: Path) -> list[str]:
    """What in the README's blocks does not match the runs they name (the copies under ``docs``)."""
    base, found = readme.parent, []
    for match in _block_pattern().finditer(readme.read_text()):
        name, body = match["name"], match["body"]
        named = re.search(rf"\]\(([^)]*/runs/{re.escape(name)}/[^)/]+\.json)\)", body)
        if named is None:
            found.append(f"bench:{name}: the block names no recorded run; run ops/bench/{name}, then ops/bench/report")
            continue
        path = base / named[1]
        if not path.exists():
            found.append(f"bench:{name}: the run it names, {named[1]}, is missing; run ops/bench/report")
            continue
        if name not in TABLES:
            found.append(f"bench:{name}: no table is rendered for {name}; remove the block")
            continue
        if block(read_run(path), readme, docs) != body:
            found.append(f"bench:{name}: the block differs from what {named[1]} renders; run ops/bench/report")
        for image in re.findall(r"!\[[^]]*\]\(([^)]+\.png)\)", body):
            if not (base / image).exists():
                found.append(f"bench:{name}: the plot {image} is missing; run ops/bench/report")
    return found


def check(args: argparse.Namespace) -> int:
    found = problems(Path(args.readme), Path(args.docs))
    for problem in found:
        print(problem, file=sys.stderr)
    if not found:
        print(f"== every bench block of {Path(args.readme).name} matches its recorded run")
    return 1 if found else 0


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--run", action="append", default=[], help="this run file for its benchmark (repeatable)")
    p.add_argument("--check", action="store_true", help="change nothing: fail when a block is not its run's")
    p.add_argument("--readme", default=str(README), help="the README to rewrite (default README.md)")
    p.add_argument("--docs", default=str(DOCS), help="where runs and plots go (default docs/bench)")
    p.add_argument("--data", default=str(RUNS), help="where the runs are recorded (default .data/bench)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    return check(args) if args.check else render(args)


if __name__ == "__main__":
    sys.exit(main())
