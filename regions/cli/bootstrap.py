"""Creates what the platform needs in Kafka and Cassandra before services start. Re-runnable."""

from __future__ import annotations

from dataclasses import dataclass

from regions.runtime.settings import Settings
from regions.stores.cassandra.session import apply_migrations
from regions.stores.kafka.clients import ensure_topics


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
