"""Creates what the platform needs in Kafka and Cassandra before services start. Re-runnable."""

from __future__ import annotations

from dataclasses import dataclass

from regions.cassandra_store import apply_migrations
from regions.kafka_clients import ensure_topics
from regions.settings import Settings


@dataclass(frozen=True, slots=True)
class BootstrapReport:
    topics_created: list[str]
    migrations_applied: list[str]


async def bootstrap(settings: Settings) -> BootstrapReport:
    """Create missing topics (partitions and compaction from settings; the replicated awards of
    every other region in ``regions``) and apply CQL migrations."""
    topics = await ensure_topics(settings.kafka, settings.remote_regions())
    migrations = apply_migrations(settings.cassandra)
    return BootstrapReport(topics_created=topics, migrations_applied=migrations)
