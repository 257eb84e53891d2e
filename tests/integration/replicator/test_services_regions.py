"""``ops/services`` runs two regions on one machine: each its own Kafka cluster and Redis on ports
100 apart, reported by ``status`` and described by ``env`` in a form the settings load."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from regions.settings import Settings
from tests.harness import free_port

ROOT = Path(__file__).resolve().parents[3]


def _services(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "ops/services"), *args], env={**os.environ, **env}, capture_output=True, text=True
    )


def _exported(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        name, value = line.removeprefix("export ").split("=", 1)
        found[name] = shlex.split(value)[0]
    return found


def test_two_regions_run_side_by_side_and_each_gets_its_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    redis, kafka, controller = free_port(), free_port(), free_port()
    env = {"LB_OPS_DATA_DIR": str(tmp_path), "LB_OPS_REDIS_PORT": str(redis),
           "LB_OPS_KAFKA_PORT": str(kafka), "LB_OPS_KAFKA_CONTROLLER_PORT": str(controller)}  # fmt: skip
    try:
        up = _services(env, "up", "--regions", "eu,us", "redis", "kafka")
        assert up.returncode == 0, up.stdout + up.stderr

        status = _services(env, "status")  # the regions are remembered
        lines = [line.split() for line in status.stdout.splitlines()]
        assert [(w[0], w[1], w[2], w[-1]) for w in lines[:4]] == [
            ("redis", "healthy", f"127.0.0.1:{redis}", "eu"),
            ("kafka", "healthy", f"127.0.0.1:{kafka}", "eu"),
            ("redis", "healthy", f"127.0.0.1:{redis + 100}", "us"),
            ("kafka", "healthy", f"127.0.0.1:{kafka + 100}", "us"),
        ]
        assert lines[4][:2] == ["cassandra", "stopped"]  # not asked for: status says so and fails
        assert status.returncode == 1
        ids = {(tmp_path / "regions" / r / "kafka/data/meta.properties").read_text() for r in ("eu", "us")}
        assert len(ids) == 2, "each region's Kafka cluster has a cluster id of its own"

        exported = _exported(_services(env, "env", "--region", "us", "--source", "eu").stdout)
        for name in [n for n in os.environ if n.startswith("LB_")]:
            monkeypatch.delenv(name)
        for name, value in exported.items():
            monkeypatch.setenv(name, value)
        us = Settings()
        assert (us.region, us.kafka.bootstrap_servers) == ("us", f"127.0.0.1:{kafka + 100}")
        assert us.regions["eu"].kafka_bootstrap_servers == f"127.0.0.1:{kafka}"
        assert us.redis.url == f"redis://127.0.0.1:{redis + 100}/0"
        assert (us.gateway.port, us.intake.port, us.replicator.health_port) == (8180, 8181, 8185)
        assert us.replicator.source_region == "eu" and us.remote_regions() == ["eu"]
        assert json.loads(exported["LB_REGIONS"]).keys() == {"eu", "us"}

        refused = _services(env, "up", "--regions", "eu", "redis", "kafka")
        assert refused.returncode == 1 and "kafka-us (region us) is running" in refused.stderr
    finally:
        down = _services(env, "down")
        assert down.returncode == 0, down.stdout + down.stderr
    assert not list((tmp_path / "run").glob("*.pid"))
