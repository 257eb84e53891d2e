"""Kafka adapter: producers, consumers and topic bootstrap, configured from settings.

Every producer is idempotent with acks=all; every consumer reads committed data only and never
auto-commits (offsets are committed inside the processor's transaction or explicitly).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from regions.settings import KafkaSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    compacted: bool
    description: str


def platform_topics(kafka: KafkaSettings) -> list[TopicSpec]:
    """The topics the platform owns. Totals is compacted: it is also the processor's changelog."""
    return [
        TopicSpec(kafka.topic("awards"), False, "accepted awards, key boardId|userId"),
        TopicSpec(kafka.topic("totals"), True, "versioned absolute totals and processor state"),
        TopicSpec(kafka.topic("reconciliation"), False, "conflicting repeats and rejected awards"),
    ]


def _topic_config(kafka: KafkaSettings, spec: TopicSpec) -> dict[str, str]:
    config = {
        "min.insync.replicas": str(kafka.min_insync_replicas),
        "unclean.leader.election.enable": "false",
    }
    if spec.compacted:
        config |= {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}
    return config


async def ensure_topics(kafka: KafkaSettings) -> list[str]:
    """Create the platform's topics that are missing; returns the names created. Re-runnable."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(
                spec.name,
                num_partitions=kafka.partitions,
                replication_factor=kafka.replication_factor,
                topic_configs=_topic_config(kafka, spec),
            )
            for spec in platform_topics(kafka)
            if spec.name not in existing
        ]
        if wanted:
            try:
                await admin.create_topics(wanted)
            except TopicAlreadyExistsError:
                log.info("topics were created concurrently")
        return [t.name for t in wanted]
    finally:
        await admin.close()


def make_producer(kafka: KafkaSettings, *, transactional_id: str | None = None) -> AIOKafkaProducer:
    """An idempotent acks=all producer; transactional when given a transactional id."""
    return AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers,
        acks="all",
        enable_idempotence=True,
        linger_ms=kafka.linger_ms,
        request_timeout_ms=kafka.request_timeout_ms,
        transactional_id=transactional_id,
        transaction_timeout_ms=kafka.transaction_timeout_ms,
    )


def make_consumer(
    kafka: KafkaSettings, *topics: str, group_id: str | None, from_beginning: bool = True
) -> AIOKafkaConsumer:
    """A read_committed consumer that never auto-commits."""
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group_id,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest" if from_beginning else "latest",
    )
