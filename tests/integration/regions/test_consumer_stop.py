"""A consumer stopped right after its broker went away: aiokafka's own stop raises the cancellation of
a fetch that is backing off, its client left running; ``stop_consumer`` finishes the stop (every fetch
ended, the client closed) and raises nothing, so a service whose run ended on that Kafka error starts it again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from regions.runtime.settings import Settings
from regions.stores.kafka.clients import stop_consumer
from regions.stores.kafka.topics import ensure_topics
from tests.clusters import RegionServerPool, RegionServers
from tests.harness import Region, delete_topics

BACKOFF_MS = 30_000  # a failed fetch waits this long before the next: the stop lands inside that wait


def _failed_fetches(caplog: pytest.LogCaptureFixture) -> int:
    return sum(r.getMessage().startswith("Failed fetch messages") for r in caplog.records)


@asynccontextmanager
async def _backing_off(
    cluster: RegionServers, tp: TopicPartition, caplog: pytest.LogCaptureFixture
) -> AsyncIterator[AIOKafkaConsumer]:
    """A consumer fetching ``tp`` through a proxy that is then cut, once one of its fetches has failed
    and is backing off."""
    proxy = await cluster.proxy()
    consumer = AIOKafkaConsumer(bootstrap_servers=cluster.proxied_bootstrap_servers, retry_backoff_ms=BACKOFF_MS,
                                request_timeout_ms=10_000, fetch_max_wait_ms=200)  # fmt: skip
    try:
        await consumer.start()
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        await consumer.getmany(timeout_ms=300)  # fetches are flowing
        before = _failed_fetches(caplog)
        proxy.cut()

        async def failed() -> bool:
            return _failed_fetches(caplog) > before

        await Region.wait_until(failed, 30, "a fetch failing on the cut connection")
        yield consumer
    finally:
        for fetch in consumer._fetcher._pending_tasks:
            fetch.cancel()
        await asyncio.gather(*consumer._fetcher._pending_tasks, return_exceptions=True)
        await consumer._client.close()
        await proxy.close()


async def test_a_consumer_stopped_while_a_failed_fetch_backs_off_stops_without_raising(
    settings: Settings, region_servers: RegionServerPool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="aiokafka.consumer.fetcher")
    [cluster] = await region_servers.get("us")
    kafka = settings.kafka.model_copy(update={"bootstrap_servers": cluster.bootstrap_servers})
    await ensure_topics(kafka)
    tp = TopicPartition(kafka.topic("awards"), 0)
    try:
        # aiokafka's own stop in this situation: the fetch's cancellation comes out of it, before it
        # closes its client. If this stops raising, aiokafka mended it and stop_consumer can go.
        async with _backing_off(cluster, tp, caplog) as plain:
            with pytest.raises(asyncio.CancelledError):
                await plain.stop()
            assert plain._client._sync_task is not None  # the client left running: never closed

        async with _backing_off(cluster, tp, caplog) as consumer:
            await stop_consumer(consumer)
            fetcher = consumer._fetcher
            assert fetcher._fetch_task.done() and all(fetch.done() for fetch in fetcher._pending_tasks)
            assert consumer._client._sync_task is None and not consumer._client._conns  # the client closed
            task = asyncio.current_task()
            assert task is not None and not task.cancelling()
    finally:
        await delete_topics(kafka, f"{kafka.topic_prefix}.")
