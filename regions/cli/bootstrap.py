"""``ops/lb bootstrap``: creates what the platform needs in Kafka and Cassandra before services start.
Re-runnable."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from regions.cli.command import Commands, add_command, say
from regions.runtime.settings import Settings
from regions.stores.cassandra.session import apply_migrations
from regions.stores.kafka.topics import ensure_topics


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


async def _bootstrap(settings: Settings, _: argparse.Namespace) -> int:
    say(
        f"bootstrapping Kafka at {settings.kafka.bootstrap_servers} and Cassandra keyspace {settings.cassandra.keyspace} ..."
    )
    report = await bootstrap(settings)
    print(f"  topics created: {', '.join(report.topics_created) or 'none (all present)'}")
    print(f"  migrations applied: {', '.join(report.migrations_applied) or 'none (up to date)'}")
    return 0


def register(commands: Commands) -> None:
    add_command(commands, "bootstrap", _bootstrap, "create topics and apply CQL migrations (re-runnable)")
