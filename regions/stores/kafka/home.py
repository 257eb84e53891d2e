"""Producers towards other regions' clusters: an intake accepting a HOME_ROUTED board's awards
outside the board's home region produces them into the home's awards topic.

One idempotent acks=all producer per home region, started on first use (an intake starts and serves
its own region's boards while a home is unreachable) and reaching the home's brokers as the
replicator does (``Settings.region_kafka``: the home's endpoint, this region's TLS/SASL). Its
request timeout is the intake's ``home_delivery_timeout_s``, so a record the home did not
acknowledge in that time fails in the producer too rather than waiting in it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from regions.runtime.metrics import INTAKE_HOME_PRODUCE_REQUESTS
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import (
    AcceptanceUnavailable,
    AwardPublisher,
    RenewableProducer,
    make_producer,
)

log = logging.getLogger(__name__)
PRODUCE_API_KEY = 0  # Kafka's Produce request


class HomeUnavailable(AcceptanceUnavailable):
    """The home region's cluster did not acknowledge within the delivery timeout (or is unknown)."""

    def __init__(self, home: str, reason: str) -> None:
        super().__init__(f"home region {home}: {reason}")
        self.home = home


def count_produce_requests(producer: AIOKafkaProducer, home: str) -> None:
    """Count every Produce request the producer sends (one per broker and drained batch of records,
    whatever the number of awards in it): the round trips a HOME_ROUTED award adds."""
    client = producer.client
    send = client.send
    counter = INTAKE_HOME_PRODUCE_REQUESTS.labels(home)

    async def counted(node_id: int, request: Any, **kwargs: Any) -> Any:
        if getattr(request, "API_KEY", None) == PRODUCE_API_KEY:
            counter.inc()
        return await send(node_id, request, **kwargs)

    client.send = counted


class HomePublishers:
    """``publish(home, records)``: the records' (partition, offset) in ``home``'s awards topic once
    its cluster acknowledged all of them; ``HomeUnavailable`` otherwise."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._timeout_s = settings.intake.home_delivery_timeout_s
        self._publishers: dict[str, AwardPublisher] = {}
        self._producers: dict[str, RenewableProducer] = {}
        self._starting: dict[str, asyncio.Lock] = {}

    async def publish(self, home: str, records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        publisher = self._publishers.get(home) or await self._start(home)
        try:
            return await publisher.publish(records)
        except AcceptanceUnavailable as exc:
            raise HomeUnavailable(home, f"did not acknowledge within {self._timeout_s:g} s ({exc})") from exc

    async def _start(self, home: str) -> AwardPublisher:
        if home not in self._settings.regions:
            raise HomeUnavailable(home, "not in LB_REGIONS: this region does not know how to reach it")
        async with self._starting.setdefault(home, asyncio.Lock()):
            if home in self._publishers:
                return self._publishers[home]
            kafka = self._settings.region_kafka(home).model_copy(
                update={"request_timeout_ms": max(100, int(self._timeout_s * 1000))}
            )
            def counted_producer() -> AIOKafkaProducer:
                made = make_producer(kafka)
                count_produce_requests(made, home)
                return made

            producer = RenewableProducer(counted_producer)
            try:
                async with asyncio.timeout(self._timeout_s):
                    await producer.start()
            except (KafkaError, TimeoutError, OSError) as exc:
                await producer.stop()
                raise HomeUnavailable(home, f"its brokers did not answer within {self._timeout_s:g} s "
                                            f"({exc!r})") from exc  # fmt: skip
            log.info("producing HOME_ROUTED awards to region %s (%s)", home, kafka.bootstrap_servers)
            self._producers[home] = producer
            self._publishers[home] = AwardPublisher(producer, kafka.topic("awards"), self._timeout_s)
            return self._publishers[home]

    async def close(self) -> None:
        self._publishers.clear()
        producers, self._producers = list(self._producers.values()), {}
        for producer in producers:
            await producer.stop()
