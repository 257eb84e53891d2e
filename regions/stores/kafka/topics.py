"""Kafka topics of the platform: what they are, and their creation (``ops/lb bootstrap``), which
refuses topics made before with another partition count than the settings'.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError

from regions.runtime.settings import KafkaSettings
from regions.stores.kafka.clients import TopicMissing, make_consumer, stop_consumer
from regions.stores.kafka.security import connection_options
from schema.replication import CHECKPOINTS_TOPIC, replicated_awards_topic

log = logging.getLogger(__name__)


class PartitionsMismatch(RuntimeError):
    """A platform topic's partitions differ from another's or from ``kafka.partitions``: state would
    land on other partitions than its awards, and readers judge freshness over ``kafka.partitions``."""


def partitions_differ(kafka: KafkaSettings, counts: Mapping[str, int]) -> str | None:
    """What is wrong when the topics' partition counts (by name) differ from ``kafka.partitions``,
    and what to do; None when they are equal."""
    by_count: dict[int, list[str]] = {}
    for name, n in sorted(counts.items()):
        if n != kafka.partitions:
            by_count.setdefault(n, []).append(name)
    if not by_count:
        return None
    found = "; ".join(
        f"{', '.join(names)} {'has' if len(names) == 1 else 'have'} {n}" for n, names in by_count.items()
    )
    return (
        f"kafka.partitions (LB_KAFKA__PARTITIONS) is {kafka.partitions} but {found}: they must be equal. "
        "Set LB_KAFKA__PARTITIONS to the topics' count, or use new topics (another LB_KAFKA__TOPIC_PREFIX, "
        "or 'ops/services reset' for the local servers' data)."
    )


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    compacted: bool
    description: str
    retention_ms: int | None = None  # also delete records older than this (compacted topics too)


def platform_topics(kafka: KafkaSettings, remote_regions: Sequence[str] = ()) -> list[TopicSpec]:
    """The topics the platform owns. Totals is compacted: it is also the processor's changelog of
    player state; dedupe is the changelog of the dedupe memory, compacted only: the processor forgets
    by stream time, with tombstones, never by the broker's clock. With other regions, one topic per
    remote region receives its replicated awards, and a compacted topic holds the replicators'
    checkpoints."""
    topics = [
        TopicSpec(kafka.topic("awards"), False, "accepted awards, key boardId|userId"),
        TopicSpec(kafka.topic("totals"), True, "versioned absolute totals and processor state"),
        TopicSpec(kafka.topic("dedupe"), True, "processor dedupe memory, key event id"),
        TopicSpec(kafka.topic("applied"), False, "applied awards with their totals: the audit feed"),
        TopicSpec(kafka.topic("reconciliation"), False, "conflicting repeats and rejected awards"),
    ]
    topics += [
        TopicSpec(kafka.topic(replicated_awards_topic(r)), False, f"awards accepted in {r}, replicated here")
        for r in remote_regions
    ]
    if remote_regions:
        topics.append(TopicSpec(kafka.topic(CHECKPOINTS_TOPIC), True, "replicators' next source offsets"))
    return topics


def _topic_config(kafka: KafkaSettings, spec: TopicSpec) -> dict[str, str]:
    config = {
        "min.insync.replicas": str(kafka.min_insync_replicas),
        "unclean.leader.election.enable": "false",
    }
    if spec.compacted:
        config |= {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000",
                   "max.compaction.lag.ms": str(kafka.max_compaction_lag_ms),
                   "delete.retention.ms": str(kafka.tombstone_retention_ms)}  # fmt: skip
    else:
        config["retention.ms"] = str(kafka.raw_retention_ms)
    if spec.retention_ms is not None:
        config |= {"cleanup.policy": "compact,delete", "retention.ms": str(spec.retention_ms)}
    return config


async def ensure_topics(kafka: KafkaSettings, remote_regions: Sequence[str] = ()) -> list[str]:
    """Create the platform's topics that are missing; returns the names created. Re-runnable."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers, **connection_options(kafka))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        specs = platform_topics(kafka, remote_regions)
        await _check_partitions(admin, kafka, [spec.name for spec in specs if spec.name in existing])
        wanted = [
            NewTopic(
                spec.name,
                num_partitions=kafka.partitions,
                replication_factor=kafka.replication_factor,
                topic_configs=_topic_config(kafka, spec),
            )
            for spec in specs
            if spec.name not in existing
        ]
        if wanted:
            try:
                await admin.create_topics(wanted)
            except TopicAlreadyExistsError:
                log.info("topics were created concurrently")
            await _until_described(admin, [t.name for t in wanted])
            await _until_served(kafka, [t.name for t in wanted])
        dedupe = next(s for s in platform_topics(kafka) if s.name == kafka.topic("dedupe"))
        if dedupe.name in existing:  # made by an older release with time retention: compacted only now
            resource = ConfigResource(ConfigResourceType.TOPIC, dedupe.name, _topic_config(kafka, dedupe))
            await admin.alter_configs([resource])
        return [t.name for t in wanted]
    finally:
        await admin.close()


async def _check_partitions(admin: AIOKafkaAdminClient, kafka: KafkaSettings, names: list[str]) -> None:
    """Refuse topics made before with another partition count than ``kafka.partitions``."""
    if not names:
        return
    counts = {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(names)}
    wrong = partitions_differ(kafka, counts)
    if wrong is not None:
        raise PartitionsMismatch(wrong)


async def _until_described(admin: AIOKafkaAdminClient, names: list[str], within_s: float = 30) -> None:
    """Wait until the brokers describe every named topic with its partitions, each with a leader: the
    controller answers a creation before the brokers' metadata holds it, and a client that looks at
    once finds nothing, or a partition no broker leads yet (its produce and fetch fail meanwhile)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        described = await admin.describe_topics(names)
        missing = [t["topic"] for t in described if t.get("error_code", 0) != 0 or not _led(t["partitions"])]
        if not missing:
            return
        if loop.time() > deadline:
            raise TopicMissing(
                f"topics {', '.join(missing)} were created but are not described with a leader for every partition after {within_s:.0f}s"
            )
        await asyncio.sleep(0.1)


async def _until_served(kafka: KafkaSettings, names: list[str]) -> None:
    """Wait until the leader of every partition of the named topics answers for it: a broker the
    metadata already names as a new partition's leader can still refuse it (not the leader) for a
    moment, and a first produce or fetch then fails and is retried. Asking each leader for the
    partition's end offset retries until it answers (within the request timeout)."""
    consumer = make_consumer(kafka, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(name, p) for name in names for p in range(kafka.partitions)]
        await consumer.end_offsets(tps)
    finally:
        await stop_consumer(consumer)


def _led(partitions: list[dict[str, int]]) -> bool:
    """Whether a topic has partitions and a broker leads each of them."""
    return bool(partitions) and all(p.get("error_code", 0) == 0 and p.get("leader", -1) >= 0 for p in partitions)
