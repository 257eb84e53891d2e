"""Every benchmark's wrapper under ops/bench, and ops/run, answer --help with their usage and start no server."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
WRAPPERS = sorted(p.name for p in (ROOT / "ops" / "bench").iterdir() if p.is_file() and not p.suffix)


def test_the_wrappers_are_found() -> None:
    assert {"pipeline", "regions", "scale"} <= set(WRAPPERS)


@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_options_before_any_server_starts(wrapper: str, flag: str, tmp_path: Path) -> None:
    data = tmp_path / "data"  # where a server started by the wrapper would keep its files
    env = {**os.environ, "LB_OPS_DATA_DIR": str(data)}
    done = subprocess.run(
        [str(ROOT / "ops" / "bench" / wrapper), "--duration", "5", flag],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: "), done.stdout[:500]
    assert not data.exists()


def test_ops_run_answers_help_and_refuses_an_unknown_argument_before_starting_anything(tmp_path: Path) -> None:
    env = {**os.environ, "LB_OPS_DATA_DIR": str(tmp_path / "data")}
    helped = subprocess.run([str(ROOT / "ops" / "run"), "--help"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60, check=False)  # fmt: skip
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Runs the product locally")
    refused = subprocess.run([str(ROOT / "ops" / "run"), "--region", "eu"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=60, check=False)  # fmt: skip
    assert refused.returncode != 0
    assert "unknown argument '--region'" in refused.stderr
    assert not (tmp_path / "data").exists()
