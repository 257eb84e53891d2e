"""The Dockerfile, checked without a container runtime: what it installs, who it runs as, and that
the commands it documents are the ones the chart runs. The build stage's install is replayed here
into a scratch environment, and every entry point is imported from it as the image's user."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helm.chart import CHART, ROOT, pod_specs, render

DOCKERFILE = ROOT / "Dockerfile"
RUNTIME_LOCK = ROOT / "requirements-runtime.lock"
EU = CHART / "ci" / "eu-values.yaml"
BUILD_TOOLS = ("gcc", "build-essential", "make", "g++", "cc ", "git")


@dataclass(frozen=True, slots=True)
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]]

    def args(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]


def stages() -> list[Stage]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out: list[Stage] = []
    variables: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "ARG" and not out:
            name, _, default = rest.partition("=")
            variables[name] = default
        elif keyword == "FROM":
            base, _, name = rest.partition(" AS ")
            for var, value in variables.items():
                base = base.replace(f"${{{var}}}", value)
            out.append(Stage(base.strip(), name.strip() or None, []))
        else:
            out[-1].instructions.append((keyword, rest))
    return out


def _lock_entries(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    entries: dict[str, tuple[str, frozenset[str]]] = {}
    for block in re.split(r"\n(?=[a-z0-9])", path.read_text()):
        head = re.match(r"([a-z0-9._-]+)==(\S+)", block)
        if head:
            entries[head.group(1)] = (head.group(2), frozenset(re.findall(r"sha256:[0-9a-f]{64}", block)))
    return entries


def build_and_run() -> tuple[Stage, Stage]:
    """The Python build stage and the final stage."""
    every = stages()
    (build,) = [s for s in every if s.name == "build"]
    return build, every[-1]


def test_the_image_is_multi_stage_on_a_slim_python_311() -> None:
    build, run = build_and_run()
    assert [s.name for s in stages()] == ["build", "graphiql", None]
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", run.base), run.base
    assert build.base == run.base


def test_graphiql_s_files_come_from_the_pinned_npm_lock_and_only_they_reach_the_image() -> None:
    (graphiql,) = [s for s in stages() if s.name == "graphiql"]
    _, run = build_and_run()
    assert re.fullmatch(r"node:\d+-\S+-slim", graphiql.base), graphiql.base
    sources = [p for copy in graphiql.args("COPY") for p in shlex.split(copy)[:-1]]
    assert sources and all(p.startswith("gateway/graphiql/") for p in sources), sources
    assert "gateway/graphiql/package-lock.json" in sources
    (run_step,) = graphiql.args("RUN")
    assert "npm ci" in run_step and "bundle.sh" in run_step
    from_graphiql = [c for c in run.args("COPY") if c.startswith("--from=graphiql")]
    assert from_graphiql == ["--from=graphiql /graphiql/assets /app/gateway/graphiql/assets"]


def test_the_build_installs_the_runtime_lock_with_hashes() -> None:
    (build, _) = build_and_run()
    installs = [r for r in build.args("RUN") if "pip install" in r]
    assert len(installs) == 1
    assert "--require-hashes" in installs[0] and "requirements-runtime.lock" in installs[0]


def test_the_runtime_lock_is_the_development_lock_without_the_dev_extra() -> None:
    """Same versions and hashes as requirements.lock, so the image runs what the tests ran."""
    runtime, full = _lock_entries(RUNTIME_LOCK), _lock_entries(ROOT / "requirements.lock")
    assert runtime, "no entries read from the runtime lock"
    for name, pinned in runtime.items():
        assert full.get(name) == pinned, name
    for dev_only in ("pytest", "mypy", "ruff", "hypothesis", "kubernetes-validate"):
        assert dev_only not in runtime


def test_the_final_stage_runs_as_the_charts_numeric_non_root_user() -> None:
    _, run = build_and_run()
    (user,) = run.args("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and uid != "0" and gid.isdigit() and gid != "0"
    for _, pod in pod_specs(render(EU).manifests()):
        assert pod["securityContext"]["runAsUser"] == int(uid)
        assert pod["securityContext"]["runAsGroup"] == int(gid)


def test_the_final_stage_has_no_build_tools() -> None:
    _, run = build_and_run()
    for command in run.args("RUN"):
        assert "pip install" not in command and "apt-get install" not in command, command
        assert not any(tool in command for tool in BUILD_TOOLS), command
    copied = " ".join(run.args("COPY"))
    assert "/tmp/requirements" not in copied


def test_the_documented_commands_are_the_charts_commands() -> None:
    comments = "\n".join(line for line in DOCKERFILE.read_text().splitlines() if line.startswith("#"))
    documented = set(re.findall(r"(?:python -m |\| )([a-z.]+)", comments))
    sets = ["global.regions.ap.kafkaBootstrapServers=ap-kafka:9092"]
    rendered = set()
    for _, pod in pod_specs(render(EU, sets=sets).manifests()):
        for c in pod["containers"]:
            assert c["command"][:2] == ["python", "-m"], c["command"]
            rendered.add(c["command"][2])
    assert rendered == documented


def test_every_copied_path_passes_the_dockerignore() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for stage in stages():
        for copy in stage.args("COPY"):
            if copy.startswith("--from"):
                continue
            for source in shlex.split(copy)[:-1]:
                assert source.split("/")[0] in allowed, source
                assert (ROOT / source).exists(), source


@pytest.fixture(scope="module")
def image_root() -> Iterator[Path]:
    """The build stage replayed: a venv from the runtime lock with the Dockerfile's pip arguments,
    the copied packages under app/, and the same .pth line."""
    # Outside pytest's private temporary folder, which the image's user may not enter.
    root = Path(tempfile.mkdtemp(prefix="lb-image-"))
    (build, _) = build_and_run()
    (install,) = [r for r in build.args("RUN") if "pip install" in r]
    pip_args = shlex.split(install.split("pip install", 1)[1].replace("/tmp/", f"{ROOT}/"))
    subprocess.run([sys.executable, "-m", "venv", root / "venv"], check=True)
    subprocess.run([root / "venv" / "bin" / "pip", "install", "-q", *pip_args], check=True)
    for copy in build.args("COPY"):
        source, target = shlex.split(copy)
        if target.startswith("/app/"):
            shutil.copytree(ROOT / source, root / "app" / Path(target).name)
    site = subprocess.run(
        [root / "venv" / "bin" / "python", "-c", "import site; print(site.getsitepackages()[0])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "leaderboard-platform.pth").write_text(f"{root / 'app'}\n")
    root.chmod(0o755)
    for path in root.rglob("*"):
        path.chmod(path.stat().st_mode | 0o044 | (0o011 if path.is_dir() else 0))
    try:
        yield root
    finally:
        shutil.rmtree(root)


@pytest.mark.integration
def test_every_entry_point_imports_from_the_runtime_lock_as_the_image_user(image_root: Path) -> None:
    """Only runtime dependencies, as uid 10001: no dev-only import, nothing that needs root."""
    modules = ["regions.intake.__main__", "regions.processor.__main__", "regions.projector.__main__",
               "regions.audit.__main__", "regions.lifecycle.__main__", "gateway.__main__", "regions.cli"]  # fmt: skip
    if (ROOT / "replicator" / "__main__.py").exists():
        modules.append("replicator.__main__")
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\nprint('ok')"
    env = {"PATH": f"{image_root / 'venv' / 'bin'}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    as_image_user = ["setpriv", "--reuid=10001", "--regid=10001", "--clear-groups"]
    argv = as_image_user if os.geteuid() == 0 else []
    done = subprocess.run(
        [*argv, image_root / "venv" / "bin" / "python", "-I", "-c", code, *modules],
        capture_output=True, text=True, env=env, cwd=image_root,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
