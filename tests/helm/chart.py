"""Rendering the chart with the pinned helm (built by ``ops/helm``) and reading what it renders."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "leaderboard"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
Manifest = dict[str, Any]


@functools.cache
def helm_binary() -> str:
    """The cached helm; built from the Go module proxy on first use (progress on stderr)."""
    done = subprocess.run([ROOT / "ops" / "helm", "which"], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@functools.cache
def kube_version() -> str:
    done = subprocess.run([ROOT / "ops" / "helm", "kube-version"], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@dataclass(frozen=True, slots=True)
class Rendered:
    ok: bool
    output: str
    error: str

    def manifests(self) -> list[Manifest]:
        if not self.ok:
            raise AssertionError(f"the chart did not render:\n{self.error}")
        return [doc for doc in yaml.safe_load_all(self.output) if doc]

    def of_kind(self, kind: str) -> list[Manifest]:
        return [m for m in self.manifests() if m["kind"] == kind]

    def named(self, kind: str, name: str) -> Manifest:
        found = [m for m in self.of_kind(kind) if m["metadata"]["name"] == name]
        if len(found) != 1:
            raise AssertionError(f"expected one {kind} {name}, found {len(found)}")
        return found[0]


def helm(*args: str | Path, chart: Path = CHART) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [helm_binary(), *map(str, args)], capture_output=True, text=True, cwd=ROOT, check=False
    )


def render(
    *values_files: Path,
    sets: Sequence[str] = (),
    json_sets: Sequence[str] = (),
    release: str = "lb",
    chart: Path = CHART,
) -> Rendered:
    """``helm template`` with the pinned Kubernetes version; ``sets`` are ``--set`` arguments."""
    args: list[str | Path] = ["template", release, chart, "--kube-version", kube_version()]
    for f in values_files:
        args += ["-f", f]
    for s in sets:
        args += ["--set", s]
    for s in json_sets:
        args += ["--set-json", s]
    done = helm(*args)
    return Rendered(done.returncode == 0, done.stdout, done.stderr)


def pod_specs(manifests: list[Manifest]) -> Iterator[tuple[Manifest, Manifest]]:
    """(workload, pod spec) of every Deployment and Job."""
    for m in manifests:
        if m["kind"] in ("Deployment", "Job"):
            yield m, m["spec"]["template"]["spec"]


def env_of(container: Manifest) -> dict[str, Any]:
    """A container's env by name: plain values as strings, references as their ``valueFrom``."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}
