"""The round: each source record handed to the handler of its kind, by its key.

Records whose key starts with a zero byte are control records: heartbeats and replication gaps
(``positions``), cutoff and expiry markers (``markers``), correction records (``corrections``),
moderation records (``moderation``), erasure records (``erasure``); any
other control record is ignored (counted), never an award. Every other record is an award
(``awards``). A record that cannot be processed goes to reconciliation with a reason, and the round
goes on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from aiokafka import ConsumerRecord, TopicPartition

from regions.core.resume import Gap
from regions.processor.round.approximate import Trending
from regions.processor.round.awards import Awards
from regions.processor.round.corrections import Corrections
from regions.processor.round.erasure import Erasures
from regions.processor.round.forgetting import forget
from regions.processor.round.markers import CutoffMarkers, ExpiryMarkers
from regions.processor.round.moderation import Moderations
from regions.processor.round.positions import SourcePositions
from regions.processor.round.state import Output, RoundState, Source, Unprocessable
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import StoreBatch, TaskStore
from schema.erasure import ERASURE_PREFIX
from schema.lifecycle import CORRECTION_PREFIX
from schema.moderation import MODERATION_PREFIX
from schema.records import (
    CONTROL_PREFIX,
    CUTOFF_PREFIX,
    EXPIRY_PREFIX,
    HEARTBEAT_KEY,
    Codec,
    Reconciliation,
    totals_key,
)
from schema.replication import GAP_KEY, SOURCE_OFFSET_HEADER

ControlHandler = Callable[[Source, bytes, bytes, int], None]  # (source, key, value, source offset)


class Round:
    """The records of one round of partition ``partition``, folded; nothing is sent or stored here."""

    def __init__(
        self,
        kafka: KafkaSettings,
        codec: Codec,
        store: TaskStore,
        partition: int,
        horizon_ms: int,
        *,
        honour_cutoffs: bool = True,
        forget_event_ids: bool = False,  # a fault for tests (processor.fault_forget_event_ids)
    ) -> None:
        self.partition = partition
        self.state = state = RoundState.begin(kafka, codec, store, partition, horizon_ms,
                                              forget_event_ids=forget_event_ids)  # fmt: skip
        self._positions = SourcePositions(state)
        self._trending = Trending(state)
        self._awards = Awards(state, self._trending, honour_cutoffs=honour_cutoffs)
        corrections = Corrections(state)
        # Control records that only move their region's position, by their exact key.
        self._by_key = {HEARTBEAT_KEY: self._positions.heartbeat, GAP_KEY: self._positions.gap}
        # A board's control records, by key prefix: their region's position passes them once handled.
        self._by_prefix: tuple[tuple[bytes, ControlHandler], ...] = (
            (CUTOFF_PREFIX, CutoffMarkers(state, corrections).add),
            (EXPIRY_PREFIX, ExpiryMarkers(state).add),
            (CORRECTION_PREFIX, corrections.add),
            (MODERATION_PREFIX, Moderations(state, self._trending).add),
            (ERASURE_PREFIX, Erasures(state, self._trending).add),
        )

    @property
    def out(self) -> list[Output]:
        """The records to send in the round's transaction, in order (watermarks apart)."""
        return self.state.out

    @property
    def offsets(self) -> dict[TopicPartition, int]:
        """The next offset to consume, per source partition read."""
        return self.state.offsets

    @property
    def counts(self) -> Counter[str]:
        """What the round met, by kind (the processor's metrics)."""
        return self.state.counts

    def deleted(self, source: Source, gap: Gap) -> None:
        """Fold in records of ``source`` that retention deleted before any round read them."""
        self._positions.deleted(source, gap)

    def add(self, source: Source, record: ConsumerRecord) -> None:
        """Fold one source record into the round."""
        state = self.state
        state.offsets[TopicPartition(record.topic, record.partition)] = record.offset + 1
        state.topic_offset = int(record.offset)
        offset: int | None = None
        try:
            offset = _source_offset(source, record)
            key = record.key or b""
            if key.startswith(CONTROL_PREFIX):
                self._control(source, key, record.value, offset)
            else:
                self._awards.add(source, record.value, offset)
        except Unprocessable as refused:
            if offset is not None:  # the record is dealt with: its region's position passes it
                state.pass_offset(source.region, offset)
            self._reconcile(refused, source, record)

    def _control(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        by_key = self._by_key.get(key)
        if by_key is not None:
            by_key(source, value, offset)
            return
        handler = next((handler for prefix, handler in self._by_prefix if key.startswith(prefix)), None)
        if handler is not None:
            handler(source, key, value, offset)
        else:
            self.state.counts["unknown_control"] += 1
        self.state.pass_offset(source.region, offset)

    def _reconcile(self, refused: Unprocessable, source: Source, record: ConsumerRecord) -> None:
        award = refused.award
        value = Reconciliation(reason=refused.reason, detail=refused.detail, award=award,
                               source_partition=record.partition, source_offset=record.offset,
                               source_topic=record.topic, raw=record.value, source_region=source.region)  # fmt: skip
        key = totals_key(award.board_id, award.user_id) if award is not None else (record.key or b"")
        self.state.reconcile(key, value)

    def forget(self, entries: list[tuple[str, int]], before_ms: int) -> None:
        """Forget the remembered copies accepted before ``before_ms`` (see ``forgetting.forget``);
        called before any record is added."""
        forget(self.state, entries, before_ms)

    def finish(self) -> None:
        """The round's last records: what it changed on approximate boards (``approximate``). Called
        once every record is added, before ``out`` is sent; ``store_batch`` calls it too."""
        self._trending.finish()

    def watermarks(self) -> list[Output]:
        """One watermark per (region, partition) this round read, for the end of the transaction."""
        return self._positions.watermarks()

    def store_batch(self, changelog: dict[str, int]) -> StoreBatch:
        """What the store writes once the round's transaction committed."""
        self.finish()
        return self.state.store_batch(changelog)


def _source_offset(source: Source, record: ConsumerRecord) -> int:
    """The record's offset in its accepting region's awards partition."""
    if not source.replicated:
        return int(record.offset)
    for name, value in record.headers or ():
        if name == SOURCE_OFFSET_HEADER:
            try:
                return int(value)
            except ValueError:
                break
    raise Unprocessable("missing_source_offset", f"no valid {SOURCE_OFFSET_HEADER} header")
