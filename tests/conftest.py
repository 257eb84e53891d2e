"""Fixtures shared by every test: settings isolated per test, and the real servers.

Integration-level tests talk to the Kafka, Redis and Cassandra started by ``ops/services up``.
When one is missing the test errors with what to do; nothing is skipped.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from cassandra.cluster import Cluster, Session
from hypothesis import settings as hypothesis_settings
from redis.asyncio import Redis

from regions.runtime.settings import Settings, load_settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import apply_migrations, connect
from regions.stores.kafka.topics import ensure_topics
from regions.stores.redis.projection import RedisProjection, connect_redis
from tests.clusters import eu_us, region_servers, replicators, second_kafka  # noqa: F401  (other regions' fixtures)
from tests.harness import Region, delete_topics, with_free_ports
from tests.multi_region import deploy  # noqa: F401  (several whole regions)

# Properties check results, not speed: no per-example deadline, so a busy machine cannot fail them.
hypothesis_settings.register_profile("project", deadline=None, print_blob=True)
hypothesis_settings.load_profile("project")


def _require(name: str, host: str, port: int) -> None:
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        raise RuntimeError(
            f"{name} is not reachable at {host}:{port} ({exc}). Start the servers with "
            "'ops/services up' (or run the whole suite with 'ops/test')."
        ) from exc


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--redis-url",
        default=None,
        help="the projection's Redis for this run instead of LB_REDIS__URL's, e.g. a Redis Cluster: "
        "redis+cluster://127.0.0.1:6380 (ops/test runs the projection and gateway tests so)",
    )
    faults = parser.getgroup("fault schedule", "tests/faults/test_fault_schedule.py (see ops/faults)")
    faults.addoption("--fault-minutes", type=float, default=None,
                     help="run the long fault profile for this many minutes instead of the short one")  # fmt: skip
    faults.addoption("--fault-seed", type=int, default=1, help="the fault schedule's seed")
    faults.addoption("--fault-regions", type=int, default=2, choices=(2, 3), help="regions of the schedule")
    faults.addoption("--fault-report", default=None, help="write the run's table to this file too")
    faults.addoption("--fault-progress", default=None, help="append what the run is doing to this file as it goes")


@pytest.fixture(scope="session")
def base_settings(pytestconfig: pytest.Config) -> Settings:
    loaded = load_settings()
    url: str | None = pytestconfig.getoption("--redis-url")
    if url is None:
        return loaded
    return loaded.model_copy(update={"redis": loaded.redis.model_copy(update={"url": url})})


@pytest.fixture(scope="session")
def session_tag() -> str:
    return uuid.uuid4().hex[:8]


def isolated(base: Settings, session_tag: str, tmp_path: Path) -> Settings:
    """``base`` with topics and Redis keys of their own, the run's keyspace and the processor's state
    under ``tmp_path`` (for a test, or a module's stack that its tests share)."""
    tag = uuid.uuid4().hex[:10]
    return base.model_copy(
        update={
            "kafka": base.kafka.model_copy(update={"topic_prefix": f"t{tag}"}),
            "redis": base.redis.model_copy(update={"key_prefix": f"t{tag}"}),
            "cassandra": base.cassandra.model_copy(update={"keyspace": f"lbtest_{session_tag}"}),
            # The broker's smallest session timeout: a killed processor's partitions move on sooner.
            "processor": base.processor.model_copy(
                update={"session_timeout_ms": 6000, "store_dir": str(tmp_path / "processor-state")}
            ),
        }
    )


@pytest.fixture
async def settings(
    base_settings: Settings, session_tag: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Settings]:
    """Settings whose topics, Redis keys and processor state are unique to this test; keyspace unique
    to the run. A test that used Kafka has its topics deleted afterwards: a broker holding every
    test's partitions would run out of file descriptors."""
    chosen = isolated(base_settings, session_tag, tmp_path)
    yield chosen
    if "kafka_ready" in request.fixturenames:
        await delete_topics(chosen.kafka, f"{chosen.kafka.topic_prefix}.")


@pytest.fixture(scope="session")
def kafka_ready(base_settings: Settings) -> None:
    host, port = base_settings.kafka.bootstrap_servers.split(",")[0].rsplit(":", 1)
    _require("Kafka", host, int(port))


@pytest.fixture(scope="session")
def redis_ready(base_settings: Settings) -> None:
    url = urlparse(base_settings.redis.url)
    _require("Redis", url.hostname or "127.0.0.1", url.port or 6379)


@pytest.fixture(scope="session")
def cassandra_ready(base_settings: Settings) -> None:
    cfg = base_settings.cassandra
    _require("Cassandra", cfg.contact_points[0], cfg.port)


@pytest.fixture
async def topics(settings: Settings, kafka_ready: None) -> Settings:
    """This test's own platform topics, created on the real broker."""
    await ensure_topics(settings.kafka)
    return settings


@pytest.fixture
async def redis_client(settings: Settings, redis_ready: None) -> AsyncIterator[Redis]:
    client = connect_redis(settings.redis)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture(scope="session")
def cassandra_session(base_settings: Settings, session_tag: str, cassandra_ready: None) -> Iterator[Session]:
    """A session on a keyspace made for this test run, migrated by the project's migrator."""
    cfg = base_settings.cassandra.model_copy(update={"keyspace": f"lbtest_{session_tag}"})
    apply_migrations(cfg)
    cluster: Cluster
    cluster, session = connect(cfg)
    try:
        yield session
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {cfg.keyspace}", timeout=120)  # a busy node drops slowly
        cluster.shutdown()


RegionFactory = Callable[..., Awaitable[Region]]


@pytest.fixture
async def region_factory(
    topics: Settings, cassandra_session: Session, redis_client: Redis, tmp_path: Path
) -> AsyncIterator[RegionFactory]:
    """Start a region's real processes for this test; ``settings`` may be adjusted first."""
    started: list[Region] = []

    async def make(
        settings: Settings | None = None, services: tuple[str, ...] = (), until: str = "/readyz"
    ) -> Region:
        chosen = with_free_ports(settings or topics)
        region = Region(chosen, CassandraCatalog(cassandra_session),
                        RedisProjection(redis_client, chosen.redis.key_prefix), tmp_path)  # fmt: skip
        started.append(region)
        await region.start(*services, until=until)
        return region

    try:
        yield make
    finally:
        for region in started:
            for service in region.processes:
                print(f"---- {service} log tail\n{region.tail(service)}")
            await region.close()


@pytest.fixture
async def region(region_factory: RegionFactory) -> Region:
    """One region with processor, projector, audit sink and intake running."""
    return await region_factory()
