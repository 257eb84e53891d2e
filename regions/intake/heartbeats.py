"""The region's heartbeat: a control record (key ``\\x00hb``) written to every partition of the awards
topic at a fixed interval. Positions advance through it while a partition is idle, in this region
and, replicated, in every other one; its absence tells a reader that the region is silent or cut off.
A heartbeat that Kafka does not acknowledge is logged (at most once per interval) and the next one
is tried on time: a heartbeat is never retried late, since only the newest one matters.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import msgspec
from aiokafka.errors import KafkaError

from regions.runtime.logs import ThrottledLog
from regions.runtime.metrics import INTAKE_HEARTBEATS
from regions.stores.kafka.clients import RenewableProducer
from schema.records import HEARTBEAT_KEY, Heartbeat

log = logging.getLogger(__name__)


class HeartbeatWriter:
    def __init__(
        self,
        producer: RenewableProducer,
        topic: str,
        region: str,
        interval_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._producer = producer
        self._topic = topic
        self._region = region
        self._interval_s = interval_s
        self._clock = clock
        self._encode = msgspec.msgpack.Encoder().encode
        self._errors = ThrottledLog(log)

    async def beat(self) -> None:
        """One heartbeat to every partition, each acknowledged within the interval."""
        value = self._encode(Heartbeat(region=self._region, at_ms=int(self._clock() * 1000)))
        with self._producer.sending() as producer:
            partitions = sorted(await producer.partitions_for(self._topic))
            async with asyncio.timeout(self._interval_s):
                sent = [await producer.send(self._topic, value, key=HEARTBEAT_KEY, partition=p) for p in partitions]
                await asyncio.gather(*sent)

    async def run(self) -> None:
        """Beat every interval until cancelled."""
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            try:
                await self.beat()
            except (KafkaError, TimeoutError) as exc:
                INTAKE_HEARTBEATS.labels("failed").inc()
                self._errors.log(logging.WARNING, "heartbeat", "heartbeat not acknowledged: %r", exc)
            except Exception as exc:  # never let the heartbeat stop silently: a silent region looks cut off
                INTAKE_HEARTBEATS.labels("failed").inc()
                self._errors.log(logging.ERROR, "heartbeat-error", "heartbeat failed: %r", exc)
            else:
                INTAKE_HEARTBEATS.labels("written").inc()
            next_at = max(next_at + self._interval_s, loop.time())
            await asyncio.sleep(next_at - loop.time())
