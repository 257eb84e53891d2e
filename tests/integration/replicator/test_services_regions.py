"""``ops/services`` runs two regions on one machine: each its own Kafka cluster and Redis on ports
100 apart, reported by ``status`` and described by ``env`` in a form the settings load; a broker can
have a second listener behind a proxy, to cut a region off at the network level."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaTimeoutError

from regions.runtime.settings import Settings
from regions.stores.kafka.clients import make_consumer
from regions.stores.kafka.topics import ensure_topics
from tests.clusters import RegionServerPool
from tests.harness import delete_topics, free_port

ROOT = Path(__file__).resolve().parents[3]


def _services(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "ops/services"), *args], env={**os.environ, **env}, capture_output=True, text=True
    )


def _exported(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
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
        assert us.kafka.partitions == 1  # ops/run's: one processor per region, one transaction a round

        # Without --source: the region's first replicator port (a supervisor adds the source's
        # index in LB_REGIONS, as ops/run does) and a note of each replicator of the region.
        region = _services(env, "env", "--region", "eu")
        assert _exported(region.stdout)["LB_REPLICATOR__HEALTH_PORT"] == "8085"
        assert (
            "#   from us: health port 8086; its settings: ops/services env --region eu --source us"
            in region.stdout
        )
        for wrong in ("xx", "eu"):  # refused before anything is printed: the output is meant for eval
            refused = _services(env, "env", "--region", "eu", "--source", wrong)
            assert refused.returncode == 1 and refused.stdout == "" and "--source" in refused.stderr

        refused = _services(env, "up", "--regions", "eu", "redis", "kafka")
        assert refused.returncode == 1 and "kafka-us (region us) is running" in refused.stderr
    finally:
        down = _services(env, "down")
        assert down.returncode == 0, down.stdout + down.stderr
    assert not list((tmp_path / "run").glob("*.pid"))


async def test_a_client_of_the_proxied_listener_reaches_the_broker_only_through_the_proxy(
    region_servers: RegionServerPool, settings: Settings
) -> None:
    """The broker's second listener advertises the proxy: metadata sends the client back to the
    proxy, never around it, so black-holing the proxy silences the broker for that client alone."""
    [cluster] = await region_servers.get("us")
    kafka = settings.kafka.model_copy(update={"bootstrap_servers": cluster.bootstrap_servers})
    await ensure_topics(kafka)
    tps = [TopicPartition(kafka.topic("awards"), p) for p in range(kafka.partitions)]
    proxy = await cluster.proxy()
    # Generous: a busy machine answers slowly; black-holed, the wait ends only at this timeout.
    through = AIOKafkaConsumer(bootstrap_servers=cluster.proxied_bootstrap_servers, request_timeout_ms=10_000)
    direct = make_consumer(kafka, group_id=None)
    await through.start()
    await direct.start()
    try:
        assert await through.end_offsets(tps) == await direct.end_offsets(tps)
        brokers = {(b.host, b.port) for b in through._client.cluster.brokers()}
        assert brokers == {("127.0.0.1", cluster.proxy_port)}, "metadata must lead back to the proxy"

        proxy.blackhole()
        with pytest.raises(KafkaTimeoutError):
            await through.end_offsets(tps)
        assert await direct.end_offsets(tps)  # the broker's own listener is not cut
        proxy.heal()
        assert await through.end_offsets(tps) == await direct.end_offsets(tps)
    finally:
        await through.stop()
        await direct.stop()
        await proxy.close()
        await delete_topics(kafka, f"{kafka.topic_prefix}.")


def test_a_proxied_listener_needs_both_of_its_settings(tmp_path: Path) -> None:
    for env in ({"LB_OPS_KAFKA_PROXIED_PORT": "9999"}, {"LB_OPS_KAFKA_PROXIED_ADVERTISED": "proxy:9"},
                {"LB_OPS_KAFKA_PROXIED_PORT": "x", "LB_OPS_KAFKA_PROXIED_ADVERTISED": "proxy:9"}):  # fmt: skip
        done = _services({"LB_OPS_DATA_DIR": str(tmp_path), **env}, "status")
        assert done.returncode == 1 and "LB_OPS_KAFKA_PROXIED_" in done.stderr, done.stderr
