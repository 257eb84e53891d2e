"""A live consumer's fetches paced by what its stream carries (regions/stores/kafka/clients.py FetchPace),
on the real broker: quiet, a fetch is answered by the first record that lands instead of waiting
out the busy wait for fetch_min_bytes."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition

from regions.runtime.settings import Settings
from regions.stores.kafka.clients import FetchPace, make_consumer, make_producer

BUSY_WAIT_MS = 10_000  # far longer than the test waits for a record: only fetch.min.bytes 1 answers in time


async def test_a_quiet_fetch_is_answered_by_the_first_record_and_an_award_makes_the_pace_busy_again(
    topics: Settings,
) -> None:
    kafka = topics.kafka.model_copy(update={"quiet_fetch_wait_ms": BUSY_WAIT_MS, "fetch_min_bytes": 1 << 20})
    tp = TopicPartition(kafka.topic("awards"), 0)
    consumer = make_consumer(kafka, group_id=None, fetch_wait_ms=BUSY_WAIT_MS)
    producer = make_producer(kafka)
    await consumer.start()
    await producer.start()
    try:
        pace = FetchPace(consumer, kafka, quiet_after_s=0.2)
        await asyncio.sleep(0.3)
        pace.after({})  # nothing came: quiet before the first fetch is sent, with a wait as long as the busy one
        assert pace.quiet
        consumer.assign([tp])
        await consumer.seek_to_end(tp)
        await consumer.getmany(timeout_ms=300)  # a quiet fetch is now waiting at the broker
        await producer.send_and_wait(tp.topic, b"{}", key=b"board|ann", partition=0)
        polled = await consumer.getmany(timeout_ms=5_000)
        assert [r.key for r in polled.get(tp, [])] == [b"board|ann"]  # a busy fetch would still wait
        pace.after(polled)
        assert not pace.quiet
        fetcher = consumer._fetcher  # the options the consumer was made with are back
        assert (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes) == (BUSY_WAIT_MS, 1 << 20)
    finally:
        await producer.stop()
        await consumer.stop()


async def test_pacing_refuses_a_consumer_that_was_not_started(topics: Settings) -> None:
    consumer = make_consumer(topics.kafka, group_id=None, fetch_wait_ms=100)
    try:
        with pytest.raises(RuntimeError, match="started aiokafka consumer"):
            FetchPace(consumer, topics.kafka)
    finally:
        await consumer.stop()
