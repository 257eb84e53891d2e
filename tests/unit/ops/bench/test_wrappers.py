"""Every benchmark's wrapper under ops/bench answers --help with its options and starts no server."""

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
