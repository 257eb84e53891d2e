"""The lifecycle worker carrying out the erasures (and lifts) asked in its region
(``regions.core.erasure``), one step per pass, each resumable after a crash.

Erasure records go into every partition of this region's awards topic; every region's projection
positions (read from its Redis: this one's, and the others' through ``settings.regions``) tell when
its processor and projector passed them; then, once every intake and audit sink has read the
erasure list (twice ``intake.erasure_refresh_s`` after the request reached the change log), the
player's Cassandra rows go (``regions.actions.erase_rows``); then the erasure is DONE. A lift is one
record per partition too, written once. An erasure or lift that a crash left out of the erasure
change log is appended to this region's lane first.

The worker carries out what is queued for its region. At start, then every
``lifecycle.erasure_sweep_s``, it also scans the erasures for those of its region with work left and
queued nowhere (a crash of the asking process between recording and queuing) and queues them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from aiokafka import AIOKafkaProducer

from regions.actions.erase_rows import PlayerStores, erase_player_rows
from regions.core.erasure import (
    AWARDS_STEP,
    DONE,
    PENDING,
    AwaitRegions,
    EraseRows,
    Finish,
    WriteRecords,
    next_step,
    projection_step,
)
from regions.runtime.settings import Settings
from regions.stores.cassandra.base import ms
from regions.stores.cassandra.erasures import CassandraErasures, ErasureEntry
from regions.stores.redis.projection import RedisProjection, connect_redis
from schema.erasure import ErasureRecord, encode_erasure, erasure_key

log = logging.getLogger(__name__)


class ErasureWorker:
    def __init__(
        self, settings: Settings, projection: RedisProjection, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings, self._region = settings, settings.region
        self._projections = {self._region: projection}
        self._clock, self._next_sweep = clock, clock()

    def _projection(self, region: str) -> RedisProjection | None:
        known = self._projections.get(region)
        endpoint = self._settings.regions.get(region)
        if known is None and endpoint is not None and endpoint.redis_url:
            redis = self._settings.redis.model_copy(update={"url": endpoint.redis_url})
            known = self._projections[region] = RedisProjection(connect_redis(redis), redis.key_prefix)
        return known

    async def tick(
        self, erasures: CassandraErasures, players: PlayerStores, producer: AIOKafkaProducer, partitions: list[int]
    ) -> bool:
        """One step of each erasure and lift queued for this region (after a sweep, when one is due);
        whether any was queued."""
        if self._clock() >= self._next_sweep:
            await self.sweep(erasures)
            self._next_sweep = self._clock() + self._settings.lifecycle.erasure_sweep_s
        queued = await erasures.queued(self._region)
        for token in queued:
            entry = await erasures.get(token)
            if entry is None:
                continue
            if entry.unlogged and not await erasures.append_change(entry, self._region):
                continue  # concurrent appends won: next pass
            if entry.lifted_at is not None:
                await self._lift(erasures, entry, producer, partitions)
            else:
                await self._step(erasures, players, entry, producer, partitions)
        return bool(queued)

    async def sweep(self, erasures: CassandraErasures) -> list[str]:
        """Queue here every erasure asked in this region (and its lift) with work left and queued in
        no region; the tokens queued. Racing the asking process (which queues it too) is harmless."""
        queued = set[str]().union(*[await erasures.queued(r) for r in self._settings.region_names()])
        found = []
        async for page in erasures.entries():
            for entry in page:
                if entry.region == self._region and entry.outstanding and entry.token not in queued:
                    await erasures.queue(self._region, entry.token)
                    found.append(entry.token)
        if found:
            log.warning("erasures: %d recorded but not queued (a crash of the asking process), queued now", len(found))
        return found

    async def _write(self, entry: ErasureEntry, user_id: str, producer: AIOKafkaProducer, partitions: list[int],
                     *, lifted: bool) -> dict[int, int]:  # fmt: skip
        record = ErasureRecord(user_id=user_id, token=entry.token, region=self._region,
                               requested_at_ms=ms(entry.requested_at) or 0, lifted=lifted)  # fmt: skip
        topic, value = self._settings.kafka.topic("awards"), encode_erasure(record)
        sent = await asyncio.gather(*(
            producer.send_and_wait(topic, value, key=erasure_key(entry.token), partition=p) for p in partitions
        ))  # fmt: skip
        return {p: s.offset for p, s in zip(partitions, sent, strict=True)}

    async def _step(
        self, erasures: CassandraErasures, players: PlayerStores, entry: ErasureEntry, producer: AIOKafkaProducer,
        partitions: list[int],
    ) -> None:  # fmt: skip
        user_id = entry.user_id
        if user_id is None:  # DONE, still queued (a crash before the dequeue)
            await erasures.record_done(entry, entry.completed_at or datetime.now(UTC))
            return
        reached = {r: await self._reached(r) for r in self._settings.region_names()}
        step = next_step(entry.written, reached, entry.steps)
        if isinstance(step, WriteRecords):
            written = await self._write(entry, user_id, producer, partitions, lifted=False)
            await erasures.record_written(entry.token, written)
            await erasures.record_step(entry.token, AWARDS_STEP, DONE,
                                       f"erasure records in {len(written)} partitions of this region's awards")  # fmt: skip
            log.info("erasure %s: records written to %d partitions", entry.token, len(written))
        elif isinstance(step, AwaitRegions):
            for region in reached:
                status, detail = (PENDING, step.waiting[region]) if region in step.waiting else (
                    DONE, "processor state, totals changelog (tombstones) and projection")  # fmt: skip
                if entry.steps.get(projection_step(region)) != (status, detail):
                    await erasures.record_step(entry.token, projection_step(region), status, detail)
        elif isinstance(step, EraseRows):
            # Every intake and audit sink has read the erasure list by then: no row of the player comes back.
            # From when the change reached the log, which a crash may have delayed past the request.
            in_log_ms = max(ms(entry.requested_at) or 0, ms(entry.logged_at) or 0)
            lists_read_ms = in_log_ms + int(2000 * self._settings.intake.erasure_refresh_s)
            if time.time() * 1000 < lists_read_ms:
                return
            for region in reached:
                await erasures.record_step(entry.token, projection_step(region), DONE,
                                           "processor state, totals changelog (tombstones) and projection")  # fmt: skip
            for done in await erase_player_rows(players, user_id, now=datetime.now(UTC)):
                await erasures.record_step(entry.token, done.store, done.status, done.detail)
        elif isinstance(step, Finish):
            await erasures.record_done(entry, datetime.now(UTC))
            log.info("erasure %s: done", entry.token)

    async def _reached(self, region: str) -> dict[int, int]:
        """How far ``region``'s projection is in this region's awards, per partition (empty: unknown)."""
        projection = self._projection(region)
        if projection is None:
            return {}
        offsets = (await projection.positions()).offsets
        return {p: o for (r, p), o in offsets.items() if r == self._region}

    async def _lift(
        self, erasures: CassandraErasures, entry: ErasureEntry, producer: AIOKafkaProducer, partitions: list[int]
    ) -> None:
        if entry.written is None or entry.lift_written is not None:  # nothing to tell, or told already
            await erasures.dequeue(self._region, entry.token)
            return
        written = await self._write(entry, entry.user_id or "", producer, partitions, lifted=True)
        await erasures.record_lift_written(entry.token, self._region, written)
        log.info("erasure %s: lifted", entry.token)
