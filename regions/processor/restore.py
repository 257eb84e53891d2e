"""Bringing a task's store up to its changelogs before the task processes anything.

The changelogs (totals: player state, watermarks, close cutoffs, held corrections, moderation and
the erasure list, tombstones of erased players' states, approximate boards' sketch blocks and
candidate sets; dedupe: the dedupe memory) are the source of
truth. A store that reflects them up to some offsets replays only the tail after those offsets. A
store that is missing, foreign (another cluster, topic or partition) or stale (offsets beyond a
changelog's end, as after the topic was recreated, or before its log start, so records it never saw
were deleted) is wiped and restored in full.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import msgspec
from aiokafka import ConsumerRecord, TopicPartition

from regions.core.aggregation import PlayerState
from regions.core.candidates import CandidateList
from regions.core.moderation import Moderation
from regions.core.positions import SourcePosition
from regions.processor import metrics
from regions.runtime.settings import KafkaSettings
from regions.stores.kafka.clients import make_consumer, replay, stop_consumer
from regions.stores.task_state import STORE_FORMAT, StoreBatch, StoreIdentity, TaskStore
from schema.moderation import MODERATED_PREFIX
from schema.records import (
    COMPLETE_KEY,
    CONTROL_PREFIX,
    EVENT_ID_BYTES,
    SEEN_BYTES,
    Codec,
    CorrectionsHeld,
    CutoffReached,
    Erased,
    ExpiryReached,
    Moderated,
    PlayerTotal,
    Watermark,
)
from schema.sketch import CandidateSet, SketchBlock

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Restored:
    mode: str  # "tail" or "full"
    reason: str  # why a full restore was needed ("" for a tail)
    records: int  # changelog records read
    seconds: float
    remembered: int = 0  # dedupe records read less tombstones: about what the memory holds


async def _log_bounds(
    kafka: KafkaSettings, tps: list[TopicPartition]
) -> tuple[dict[str, int], dict[str, int]]:
    """(log start, end) offset of each changelog partition, by topic."""
    consumer = make_consumer(kafka, group_id=None)
    await consumer.start()
    try:
        begin = await consumer.beginning_offsets(tps)
        end = await consumer.end_offsets(tps)
    finally:
        await stop_consumer(consumer)
    return {tp.topic: begin[tp] for tp in tps}, {tp.topic: end[tp] for tp in tps}


def stale_reason(
    store: TaskStore, identity: StoreIdentity, begin: dict[str, int], end: dict[str, int]
) -> str:
    """Why the store cannot continue from its own offsets ("" when it can)."""
    found = store.identity()
    if found is None:
        return "no local store"
    if found != identity:
        return f"the local store reflects {found}, not {identity}"
    if store.format() != STORE_FORMAT:
        return f"the local store is in format {store.format()}, this version keeps format {STORE_FORMAT}"
    at = store.changelog_positions()
    for topic in identity.changelogs:
        position = at.get(topic, 0)
        if position > end[topic]:
            return f"the store is at offset {position} of {topic}, beyond its end {end[topic]}"
        if position < begin[topic]:
            return f"the store is at offset {position} of {topic}, before its log start {begin[topic]}"
    return ""


class _Loader:
    """Applies changelog records to the store, one write batch per fetched batch. A batch is
    written on a worker thread (RocksDB lets go of the GIL) while the next one is fetched and
    decoded; one write at a time, in order, so the store always holds a prefix of the changelogs."""

    def __init__(self, store: TaskStore, totals_topic: str) -> None:
        self._store, self._totals, self._codec = store, totals_topic, Codec()
        self._writing: asyncio.Future[None] | None = None
        self.records = 0
        self.remembered = 0

    async def __call__(self, records: list[ConsumerRecord]) -> None:
        """Records of one changelog partition (``replay`` hands them over per partition)."""
        batch = StoreBatch()
        if records[0].topic == self._totals:
            self._totals_records(batch, records)
        else:
            self._dedupe_records(batch, records)
            self.remembered += len(batch.packed_seen) - len(batch.forgotten)
        batch.changelog[records[-1].topic] = records[-1].offset + 1
        await self.written()
        self._writing = asyncio.ensure_future(asyncio.to_thread(self._store.write, batch, bulk=True))
        self.records += len(records)

    async def written(self) -> None:
        """Until the batch being written is in the store."""
        if self._writing is not None:
            writing, self._writing = self._writing, None
            await writing

    def _totals_records(self, batch: StoreBatch, records: list[ConsumerRecord]) -> None:
        decode = self._codec.totals
        for record in records:
            if record.value is None:  # a tombstone: an erased player's state, or its moderation
                self._tombstone(batch, record.key or b"")
                continue
            try:
                value = decode(record.value)
            except msgspec.DecodeError as exc:
                log.error(
                    "skipping an undecodable totals record at %s:%d: %s", record.topic, record.offset, exc
                )
                continue
            if isinstance(value, PlayerTotal) and value.estimated:
                continue  # an approximate board's candidate: its candidate set is the state
            if isinstance(value, PlayerTotal):
                batch.players[(value.board_id, value.user_id)] = PlayerState(
                    value.total, value.version, value.reached, value.buckets, value.contributions,
                    value.metadata, value.notes,
                )
                # The day index may keep days a later total no longer has: an expiry skips them.
                batch.days_added.update((value.board_id, day, value.user_id) for day, _, _ in value.buckets)
            elif isinstance(value, ExpiryReached):
                known = batch.expired.get(value.board_id, value.expired_through)
                batch.expired[value.board_id] = max(known, value.expired_through)
            elif isinstance(value, Watermark) and value.region:
                self._watermark(batch, value)
            elif isinstance(value, CutoffReached):
                batch.cutoffs.setdefault((value.board_id, value.region), value.source_offset)
            elif isinstance(value, CorrectionsHeld):
                batch.held[value.board_id] = tuple(value.corrections)
            elif isinstance(value, Moderated):
                batch.moderation[(value.board_id, value.user_id)] = Moderation(value.sequence, value.hidden)
            elif isinstance(value, Erased):
                batch.erased[value.token] = not value.lifted
            elif isinstance(value, SketchBlock):
                batch.sketch[(value.board_id, value.row, value.block)] = tuple(value.counters)
            elif isinstance(value, CandidateSet):
                batch.candidates[value.board_id] = CandidateList(value.version, value.total, tuple(value.items),
                                                                 tuple(value.exact), value.lossless)  # fmt: skip

    @staticmethod
    def _tombstone(batch: StoreBatch, key: bytes) -> None:
        """Whatever the batch holds under the tombstone's key goes, and so does the store's."""
        if key.startswith(MODERATED_PREFIX):
            board, _, user = key[len(MODERATED_PREFIX) :].decode().partition("|")
        elif not key.startswith(CONTROL_PREFIX):
            board, _, user = key.decode().partition("|")
        else:
            return
        batch.players.pop((board, user), None)
        batch.moderation.pop((board, user), None)
        batch.erased_players.add((board, user))

    @staticmethod
    def _dedupe_records(batch: StoreBatch, records: list[ConsumerRecord]) -> None:
        """Copied as they are: a dedupe record's key and value are what the store keeps; a tombstone
        forgets its event id, and the completeness record raises the memory's bound."""
        seen, forgotten = batch.packed_seen, batch.forgotten
        for record in records:
            key, value = record.key, record.value
            if key == COMPLETE_KEY and value is not None and len(value) == 8:
                since = int.from_bytes(value, "big", signed=True)
                batch.complete_since_ms = max(since, batch.complete_since_ms or since)
            elif key is not None and len(key) == EVENT_ID_BYTES and value is None:
                seen.pop(key, None)
                forgotten[key] = None
            elif key is not None and value is not None and len(key) == EVENT_ID_BYTES and _is_seen(value):
                seen[key] = value
                forgotten.pop(key, None)
            else:
                log.error("skipping a dedupe record at %s:%d that is not an event id and its digest and time "
                          "(%r: %r)", record.topic, record.offset, key, value)  # fmt: skip

    @staticmethod
    def _watermark(batch: StoreBatch, mark: Watermark) -> None:
        batch.sources[mark.region] = SourcePosition(
            mark.source_offset, mark.accepted_at_ms, mark.heartbeat_at_ms, mark.gaps
        )


def _is_seen(value: bytes) -> bool:
    return len(value) == SEEN_BYTES or len(value) >= SEEN_BYTES + 8


async def restore(
    kafka: KafkaSettings, store: TaskStore, identity: StoreIdentity, *, retention_ms: int
) -> Restored:
    """Bring ``store`` up to the end of its changelog partitions; returns what it took."""
    started = time.perf_counter()
    tps = [TopicPartition(topic, identity.partition) for topic in identity.changelogs]
    begin, end = await _log_bounds(kafka, tps)
    reason = stale_reason(store, identity, begin, end)
    if reason:
        store.reset(identity)
    at = store.changelog_positions()
    loader = _Loader(store, identity.changelogs[0])
    start = {tp: max(at.get(tp.topic, 0), begin[tp.topic]) for tp in tps}
    try:
        ends = await replay(kafka, tps, loader, start=start)
    finally:
        await loader.written()
    store.write(StoreBatch(changelog={tp.topic: ends[tp] for tp in tps}), bulk=True)  # past trailing markers
    if reason and begin[identity.changelogs[-1]] > 0 and store.complete_since_ms() is None:
        # A dedupe changelog that forgot by time (kept so before the memory forgot by stream time)
        # and holds no completeness record: copies older than its retention may be gone.
        log.warning("the dedupe changelog of partition %d starts at offset %d with no completeness record: "
                    "assuming copies older than %d s are forgotten", identity.partition,
                    begin[identity.changelogs[-1]], retention_ms // 1000)  # fmt: skip
        store.write(StoreBatch(complete_since_ms=int(time.time() * 1000) - retention_ms), bulk=True)
    await asyncio.to_thread(store.flush)  # durable before the task writes anything with the log on
    mode = "full" if reason else "tail"
    done = Restored(mode, reason, loader.records, time.perf_counter() - started, max(0, loader.remembered))
    metrics.RESTORE_SECONDS.labels(mode).observe(done.seconds)
    metrics.RESTORE_RECORDS.labels(mode).inc(done.records)
    return done
