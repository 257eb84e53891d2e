"""One round of one processor task: partition p of every source topic folded against the task's store.

A round reads the store and writes nothing: it yields the records to send in the task's transaction
(totals, dedupe memory, applied awards, reconciliation, one watermark per (region, partition) read)
and the batch to write to the store once that transaction committed. Every source record has an
accepting region and an offset in that region's awards partition: a local record its own offset, a
replicated one the offset the replicator put in its header.

Records whose key starts with a zero byte are control records: heartbeats advance their region's
position, replication gaps are counted into it, a board's first cutoff marker from a region becomes
that (board, region)'s cutoff in this partition (recorded in the store and sent to the totals topic as
``CutoffReached``; later markers change nothing), any other is ignored (counted), never an award.
An award of a board after its region's cutoff is late: it goes to reconciliation (``late``), never
applied.

Awards carry their board's time window. On a board with periods an award counts in the period that
holds its event time, as the board ``<board>@<period key>`` (``schema.scoped``): its own state,
totals, cutoffs. On a ROLLING board it counts in the day bucket of its event time; a board's expiry
marker (written by its home region) drops the buckets of the days that left the window from exactly
the players the day index names, with a new versioned total each (or their removal); an award of a
day that has left the window is late.

A correction record of a closed board sets the player's total (a new version) once the task
has met the cutoff of every region the board closed with, so that no award of the board is folded
after it; one met before that is held in the store (and the totals changelog, ``CorrectionsHeld``)
until then.
A record that cannot be processed goes to reconciliation with a reason, and the round goes on.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import msgspec
from aiokafka import ConsumerRecord, TopicPartition

from regions.core.aggregation import (
    Applied,
    Conflict,
    DedupeMemory,
    Duplicate,
    Forgotten,
    Outcome,
    OutOfRange,
    PlayerState,
    Replaced,
    Seen,
    apply_award,
)
from regions.core.boards import Aggregation, SortOrder, TiePolicy
from regions.core.corrections import Corrected, UnknownPlayer, apply_correction, identity_of, is_final
from regions.core.lifecycle import is_late
from regions.core.periods import InvalidWindow, WindowSpec, day_key, day_of, period_of
from regions.core.positions import SourcePosition
from regions.core.rolling import TooLate, apply_rolling, expire
from regions.core.windows import decode_window
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import CutoffKey, DayEntry, StateKey, StoreBatch, TaskStore
from schema.lifecycle import (
    CORRECTION_PREFIX,
    CorrectionRecord,
    CorrectionsHeld,
    CutoffMarker,
    HeldCorrection,
    LifecycleCodec,
    correction_key,
    cutoff_reached_key,
    held_key,
)
from schema.records import (
    COMPLETE_KEY,
    CONTROL_PREFIX,
    CUTOFF_PREFIX,
    EXPIRY_PREFIX,
    HEARTBEAT_KEY,
    AppliedAward,
    AwardEvent,
    Codec,
    CutoffReached,
    PlayerTotal,
    Reconciliation,
    Watermark,
    dedupe_key,
    pack_seen,
    totals_key,
    watermark_key,
)
from schema.replication import GAP_KEY, SOURCE_OFFSET_HEADER, ReplicationCodec
from schema.scoped import period_board_id
from schema.windows import ExpiryMarker, ExpiryReached, expiry_key

log = logging.getLogger(__name__)
Output = tuple[str, bytes, bytes | None]  # (topic, key, value; None: a tombstone)
FORGET_BATCH = 50_000
"""Most remembered copies one round forgets (the rest in the next rounds)."""
T = TypeVar("T")
M = TypeVar("M", CutoffMarker, ExpiryMarker)


class Unprocessable(Exception):
    """A record the round cannot process; it goes to reconciliation with ``reason``."""

    def __init__(self, reason: str, detail: str, award: AwardEvent | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.award = reason, detail, award


@dataclass(frozen=True, slots=True)
class Source:
    """A source topic: its accepting region, and whether its records are replicated copies."""

    topic: str
    region: str
    replicated: bool


def _refusal(outcome: Conflict | OutOfRange | Forgotten) -> tuple[str, str]:
    if isinstance(outcome, Conflict):
        return (
            "conflicting_repeat",
            f"event {outcome.event_id} was applied with digest {outcome.recorded_digest}",
        )
    if isinstance(outcome, OutOfRange):
        return "total_out_of_range", f"total would be {outcome.total}, outside +-2^53"
    return "beyond_dedupe_memory", (
        f"event {outcome.event_id} may repeat a copy accepted before {outcome.complete_since_ms}, "
        "which the dedupe memory no longer holds"
    )


def _same(a: CorrectionRecord, b: CorrectionRecord) -> bool:
    return (a.board_id, a.correction_id, a.user_id) == (b.board_id, b.correction_id, b.user_id)


def _correction_refusal(
    outcome: Conflict | OutOfRange | Forgotten | UnknownPlayer, record: CorrectionRecord
) -> tuple[str, str]:
    if isinstance(outcome, UnknownPlayer):
        return "correction_unknown_player", (
            f"correction {record.correction_id!r} of {record.board_id!r} adjusts {record.user_id!r}, who "
            "has no total in this partition"
        )
    return _refusal(outcome)


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
        self._kafka, self._codec, self._store, self.partition = kafka, codec, store, partition
        self._honour_cutoffs = honour_cutoffs
        self._forget = forget_event_ids
        self._gap = ReplicationCodec().gap
        lifecycle = LifecycleCodec()
        self._marker, self._correction = lifecycle.marker, lifecycle.correction
        self._memory = DedupeMemory(horizon_ms, store.complete_since_ms())
        self._known = store.sources()
        self.players: dict[StateKey, PlayerState] = {}
        self.seen: dict[str, Seen] = {}
        self.positions: dict[str, SourcePosition] = {}
        self.cutoffs: dict[CutoffKey, int] = {}  # cutoffs met in this round
        self.expired: dict[str, int] = {}  # ROLLING boards' days expired in this round
        self.days_added: set[DayEntry] = set()
        self.days_removed: set[DayEntry] = set()
        self.held: dict[str, tuple[HeldCorrection, ...]] = {}  # boards whose held corrections changed
        self.forgotten: dict[bytes, int | None] = {}  # remembered copies this round forgets
        self.complete_since_ms: int | None = None  # the memory's completeness bound, when raised here
        # Newest (offset, acceptance time) of the awards read per region, folded into ``positions`` at
        # the end of the round: one position update per region instead of one per award.
        self._newest: dict[str, tuple[int, int]] = {}
        self.out: list[Output] = []
        self._topic_offset = -1  # offset of the record being folded, in its source topic
        self.offsets: dict[TopicPartition, int] = {}  # next offset to consume, per source partition
        self.counts: Counter[str] = Counter()

    def add(self, source: Source, record: ConsumerRecord) -> None:
        """Fold one source record into the round."""
        self.offsets[TopicPartition(record.topic, record.partition)] = record.offset + 1
        self._topic_offset = int(record.offset)
        offset: int | None = None
        try:
            offset = self._source_offset(source, record)
            key = record.key or b""
            if key.startswith(CONTROL_PREFIX):
                self._control(source, key, record.value, offset)
            else:
                self._award(source, record.value, offset)
        except Unprocessable as refused:
            if offset is not None:  # the record is dealt with: its region's position passes it
                self.positions[source.region] = self._position(source.region).after_other(offset)
            self._reconcile(refused.reason, refused.detail, refused.award, source, record)

    def _source_offset(self, source: Source, record: ConsumerRecord) -> int:
        if not source.replicated:
            return int(record.offset)
        for name, value in record.headers or ():
            if name == SOURCE_OFFSET_HEADER:
                try:
                    return int(value)
                except ValueError:
                    break
        raise Unprocessable("missing_source_offset", f"no valid {SOURCE_OFFSET_HEADER} header")

    def _position(self, region: str) -> SourcePosition:
        return self.positions.get(region) or self._known.get(region) or SourcePosition()

    def _control(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        if key == HEARTBEAT_KEY:
            beat = self._decode(self._codec.heartbeat, value, "undecodable_control")
            self.positions[source.region] = self._position(source.region).after_heartbeat(offset, beat.at_ms)
            self.counts["heartbeat"] += 1
        elif key == GAP_KEY:
            gap = self._decode(self._gap, value, "undecodable_control")
            log.warning(
                "replication gap: %s's awards %d..%d of partition %d were deleted before they were copied",
                gap.source_region, gap.first_missing, gap.first_available - 1, gap.source_partition,
            )  # fmt: skip
            self.positions[source.region] = self._position(source.region).after_gap(offset)
            self.counts["gap"] += 1
        elif key.startswith(CUTOFF_PREFIX):
            self._cutoff_marker(source, key, value, offset)
            self.positions[source.region] = self._position(source.region).after_other(offset)
        elif key.startswith(EXPIRY_PREFIX):
            self._expiry_marker(source, key, value, offset)
            self.positions[source.region] = self._position(source.region).after_other(offset)
        elif key.startswith(CORRECTION_PREFIX):
            self._correction_record(source, key, value, offset)
            self.positions[source.region] = self._position(source.region).after_other(offset)
        else:
            self.positions[source.region] = self._position(source.region).after_other(offset)
            self.counts["unknown_control"] += 1

    def _board_marker(self, kind: str, decode: Callable[[bytes], M], prefix: bytes, source: Source,
                      key: bytes, value: bytes) -> tuple[M, str]:  # fmt: skip
        """A board's control record (cutoff or expiry marker) and its board; refused unless its key
        names its board and it comes from the region that wrote it."""
        marker = self._decode(decode, value, "undecodable_control")
        board_id = key[len(prefix) :].decode(errors="replace")
        if marker.board_id != board_id or marker.region != source.region:
            raise Unprocessable(
                "unprocessable_control",
                f"{kind} marker of {marker.board_id!r} by {marker.region!r} under key of {board_id!r} "
                f"in {source.region}'s awards",
            )
        return marker, board_id

    def _cutoff_marker(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        _, board_id = self._board_marker("cutoff", self._marker, CUTOFF_PREFIX, source, key, value)
        cutoff_key = (board_id, source.region)
        if self._cutoff(cutoff_key) is not None:
            self.counts["cutoff_repeat"] += 1  # written twice (a restart, two workers): the first counts
            return
        self.cutoffs[cutoff_key] = offset
        reached = CutoffReached(board_id=board_id, region=source.region, source_partition=self.partition,
                                source_offset=offset)  # fmt: skip
        self.out.append((self._kafka.topic("totals"), cutoff_reached_key(board_id, source.region),
                         self._codec.encode(reached)))  # fmt: skip
        self.counts["cutoff"] += 1
        held = self._held(board_id)
        ready = [h for h in held if self._final(h.correction)]  # their fold is final now: they apply
        if ready:
            self._set_held(board_id, tuple(h for h in held if h not in ready))
            for h in sorted(ready, key=lambda h: (h.correction.result_version, h.correction.user_id)):
                self._correct(h)

    def _cutoff(self, key: CutoffKey) -> int | None:
        known = self.cutoffs.get(key)
        return known if known is not None else self._store.cutoff(key)

    def _final(self, record: CorrectionRecord) -> bool:
        """The partition has met the cutoff of every region the record's board closed with."""
        met = {region: self._cutoff((record.board_id, region)) is not None for region in record.regions}
        return is_final(record.regions, met)

    def _held(self, board_id: str) -> tuple[HeldCorrection, ...]:
        known = self.held.get(board_id)
        return known if known is not None else self._store.held(board_id)

    def _set_held(self, board_id: str, held: tuple[HeldCorrection, ...]) -> None:
        self.held[board_id] = held
        record = CorrectionsHeld(board_id=board_id, corrections=list(held))
        self.out.append((self._kafka.topic("totals"), held_key(board_id), self._codec.encode(record)))

    def _correction_record(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        record = self._decode(self._correction, value, "undecodable_control")
        if key != correction_key(record.board_id, record.user_id) or record.region != source.region:
            raise Unprocessable(
                "unprocessable_control",
                f"correction of {record.board_id!r}/{record.user_id!r} by {record.region!r} under key "
                f"{key!r} in {source.region}'s awards",
            )
        held = HeldCorrection(record, source.topic, self._topic_offset, offset)
        if self._final(record):
            self._correct(held)
            return
        known = self._held(record.board_id)
        if any(_same(h.correction, record) for h in known):
            self.counts["correction_repeat"] += 1  # written again while held
            return
        self._set_held(record.board_id, (*known, held))
        self.counts["correction_held"] += 1

    def _correct(self, held: HeldCorrection) -> None:
        """Apply one correction record to the board's final fold in this partition."""
        record, state_key = held.correction, (held.correction.board_id, held.correction.user_id)
        event_id = identity_of(record)[0]
        outcome = apply_correction(self._player(state_key), self._seen(event_id), record, self._memory)
        if isinstance(outcome, Corrected):
            self.players[state_key] = outcome.state
            self._remember(event_id, outcome.seen)
            total = PlayerTotal(
                board_id=record.board_id, user_id=record.user_id, total=outcome.state.total,
                version=outcome.state.version, reached=outcome.state.reached, sort_order=record.sort_order,
                tie_policy=record.tie_policy, source_partition=self.partition, source_offset=held.source_offset,
                event_id=event_id, source_region=record.region,
            )  # fmt: skip
            self.out.append((self._kafka.topic("totals"), totals_key(*state_key), self._codec.encode(total)))
            self.counts["corrected"] += 1
        elif isinstance(outcome, Duplicate):
            self.counts["correction_repeat"] += 1
        else:
            reason, detail = _correction_refusal(outcome, record)
            value = Reconciliation(reason=reason, detail=detail, award=None, source_partition=self.partition,
                                   source_offset=held.topic_offset, source_topic=held.topic,
                                   raw=self._codec.encode(record), source_region=record.region)  # fmt: skip
            key = totals_key(record.board_id, record.user_id)  # as an award's: readers find its board
            self.out.append((self._kafka.topic("reconciliation"), key, self._codec.encode(value)))
            self.counts[f"reconciled:{reason}"] += 1

    @staticmethod
    def _decode(decode: Callable[[bytes], T], value: bytes, reason: str) -> T:
        try:
            return decode(value)
        except msgspec.DecodeError as exc:
            raise Unprocessable(reason, str(exc)) from exc

    def _award(self, source: Source, value: bytes, offset: int) -> None:
        award = self._decode(self._codec.award, value, "undecodable")
        try:
            SortOrder(award.sort_order), TiePolicy(award.tie_policy)  # rules this version must know
            spec = decode_window(award.window)
            board_id = award.board_id if spec is None or spec.rolling else self._period_id(award, spec)
        except ValueError as exc:  # an aggregation, order, tie policy or window this version does not know
            raise Unprocessable("unprocessable", str(exc), award) from exc
        cutoff = self._cutoff((board_id, source.region))
        if self._honour_cutoffs and is_late(cutoff, offset):
            raise Unprocessable(
                "late",
                f"accepted by {source.region} at offset {offset} of partition {self.partition}, after the "
                f"close cutoff of {board_id} at offset {cutoff}",
                award,
            )
        state_key = (board_id, award.user_id)
        try:
            outcome = self._outcome(award, state_key, spec)
        except ValueError as exc:  # an aggregation this version does not know
            raise Unprocessable("unprocessable", str(exc), award) from exc
        newest = self._newest.get(source.region, (-1, 0))
        self._newest[source.region] = (max(newest[0], offset), max(newest[1], award.accepted_at_ms))
        if isinstance(outcome, Applied):
            self._applied(board_id, award, outcome, source.region, offset)
        elif isinstance(outcome, Replaced):
            self._replaced(board_id, award, outcome, source, offset)
        elif isinstance(outcome, Duplicate):
            self.counts["duplicate"] += 1
        elif isinstance(outcome, TooLate):
            raise Unprocessable(
                "late",
                f"its day {day_key(outcome.day)} has left {award.board_id}'s rolling window (expired through "
                f"{day_key(outcome.expired_through)})",
                award,
            )
        else:
            raise Unprocessable(*_refusal(outcome), award)

    @staticmethod
    def _period_id(award: AwardEvent, spec: WindowSpec) -> str:
        try:
            return period_board_id(award.board_id, period_of(spec, award.event_at_ms).key)
        except InvalidWindow as exc:
            raise ValueError(str(exc)) from exc

    def _outcome(self, award: AwardEvent, key: StateKey, spec: WindowSpec | None) -> Outcome | TooLate:
        state, seen = self._player(key), self._seen(award.event_id)
        if spec is None or not spec.rolling:
            return apply_award(state, seen, award, self._memory, same_state=spec is None)
        day = day_of(spec, award.event_at_ms)
        outcome = apply_rolling(state, seen, award, self._memory, day=day,
                                expired_through=self._expired(award.board_id))  # fmt: skip
        if isinstance(outcome, Applied):
            entry = (award.board_id, day, award.user_id)
            self.days_added.add(entry)
            self.days_removed.discard(entry)
        return outcome

    def _expired(self, board: str) -> int | None:
        known = self.expired.get(board)
        return known if known is not None else self._store.expired_through(board)

    def _expiry_marker(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        marker, board_id = self._board_marker("expiry", self._codec.expiry, EXPIRY_PREFIX, source, key, value)
        known = self._expired(board_id)
        if known is not None and marker.expired_through <= known:
            self.counts["expiry_repeat"] += 1  # replicated twice, written again: nothing new expires
            return
        try:
            aggregation = Aggregation(marker.aggregation)
        except ValueError as exc:
            raise Unprocessable("unprocessable_control", str(exc)) from exc
        for entry in self._entries_of_days(board_id, known, marker.expired_through):
            self.days_removed.add(entry)
            self.days_added.discard(entry)
            self._expire_player(marker, aggregation, entry[2], source.region, offset)
        self.expired[board_id] = marker.expired_through
        reached = ExpiryReached(board_id=board_id, expired_through=marker.expired_through,
                                source_region=source.region, source_partition=self.partition,
                                source_offset=offset)  # fmt: skip
        self.out.append((self._kafka.topic("totals"), expiry_key(board_id), self._codec.encode(reached)))
        self.counts["expiry"] += 1

    def _entries_of_days(self, board: str, after: int | None, through: int) -> list[DayEntry]:
        """The day index's entries of those days: the store's and this round's (not yet stored)."""
        low = -1 if after is None else after
        found = set(self._store.players_of_days(board, after, through)) - self.days_removed
        found |= {e for e in self.days_added if e[0] == board and low < e[1] <= through}
        return sorted(found, key=lambda e: (e[2], e[1]))

    def _expire_player(
        self, marker: ExpiryMarker, aggregation: Aggregation, user: str, region: str, offset: int
    ) -> None:
        key = (marker.board_id, user)
        state = self._player(key)
        changed = None if state is None else expire(aggregation, state, marker.expired_through)
        if changed is None:
            return  # an index entry of a day the player no longer has, or one already visited
        self.players[key] = changed
        total = PlayerTotal(
            board_id=marker.board_id, user_id=user, total=changed.total, version=changed.version,
            reached=changed.reached, sort_order=marker.sort_order, tie_policy=marker.tie_policy,
            source_partition=self.partition, source_offset=offset, event_id="", source_region=region,
            buckets=changed.buckets, removed=not changed.buckets, shards=marker.shards,
        )  # fmt: skip
        self.out.append((self._kafka.topic("totals"), totals_key(*key), self._codec.encode(total)))
        self.counts["expired_players"] += 1

    def _player(self, key: StateKey) -> PlayerState | None:
        known = self.players.get(key)
        return known if known is not None else self._store.player(key)

    def _seen(self, event_id: str) -> Seen | None:
        if self._forget:
            return None
        known = self.seen.get(event_id)
        if known is not None:
            return known
        held = self._store.seen(event_id)
        forgotten = self.forgotten.get(dedupe_key(event_id), -1) if self.forgotten else -1
        return None if held is not None and held.at_ms == forgotten else held

    def _applied(
        self, board_id: str, award: AwardEvent, outcome: Applied | Replaced, region: str, offset: int
    ) -> None:
        """The award's player has a new state: a new total, the copy remembered, the applied award
        for the audit (a replaced copy's row is written over)."""
        key = (board_id, award.user_id)
        self.players[key] = outcome.state
        total = PlayerTotal(
            board_id=board_id, user_id=award.user_id, total=outcome.state.total,
            version=outcome.state.version, reached=outcome.state.reached, sort_order=award.sort_order,
            tie_policy=award.tie_policy, source_partition=self.partition, source_offset=offset,
            event_id=award.event_id, source_region=region, buckets=outcome.state.buckets,
            shards=award.shards, contributions=outcome.state.contributions,
        )  # fmt: skip
        kafka, encode = self._kafka, self._codec.encode
        self.out.append((kafka.topic("totals"), totals_key(*key), encode(total)))
        self._remember(award.event_id, outcome.seen)
        applied = AppliedAward(award=award, total=total.total, version=total.version,
                               source_partition=self.partition, source_offset=offset, source_region=region)  # fmt: skip
        self.out.append((kafka.topic("applied"), totals_key(*key), encode(applied)))
        self.counts["applied"] += 1
        if isinstance(outcome, Applied):
            self.counts["dedupe_remembered"] += 1

    def _replaced(
        self, board_id: str, award: AwardEvent, outcome: Replaced, source: Source, offset: int
    ) -> None:
        """The award is another copy of one applied before, and it wins: its total and audit row
        replace the loser's. A loser with another payload goes to reconciliation, as the losing
        copy does in every region where it is read second."""
        self._applied(board_id, award, outcome, source.region, offset)
        self.counts["applied"] -= 1
        self.counts["copy_replaced"] += 1
        if outcome.refused is not None:
            lost = outcome.refused  # what the memory kept of it: not its event time
            loser = msgspec.structs.replace(award, digest=lost.digest, accepted_at_ms=lost.at_ms,
                                            region=lost.region, amount=lost.amount or 0, occurred_at_ms=None)  # fmt: skip
            detail = (f"event {award.event_id} was replaced by the copy accepted by {award.region} at "
                      f"{award.accepted_at_ms} (digest {award.digest}): of several copies the earliest counts")  # fmt: skip
            value = Reconciliation(reason="conflicting_repeat", detail=detail, award=loser,
                                   source_partition=self.partition, source_offset=self._topic_offset,
                                   source_topic=source.topic, raw=None, source_region=lost.region)  # fmt: skip
            key = totals_key(award.board_id, award.user_id)
            self.out.append((self._kafka.topic("reconciliation"), key, self._codec.encode(value)))
            self.counts["reconciled:conflicting_repeat"] += 1

    def _remember(self, event_id: str, seen: Seen) -> None:
        """The dedupe memory holds ``event_id`` from now on (in the store and its changelog)."""
        self.seen[event_id] = seen
        self.forgotten.pop(dedupe_key(event_id), None)
        packed = pack_seen(seen.digest, seen.at_ms, seen.region, seen.amount)
        self.out.append((self._kafka.topic("dedupe"), dedupe_key(event_id), packed))

    def forget(self, entries: list[tuple[str, int]], before_ms: int) -> None:
        """Forget the remembered copies accepted before ``before_ms``: ``entries`` are the store's
        oldest (``TaskStore.oldest_seen``). Called before any record is added: a tombstone per copy
        and the memory's new completeness bound (just after the newest copy forgotten: nothing was
        forgotten after it) go to the dedupe changelog, in the round's transaction."""
        if len(entries) >= FORGET_BATCH:
            before_ms = min(before_ms, entries[-1][1])  # part of them this round: the rest next time
        dedupe, newest = self._kafka.topic("dedupe"), None
        for event_id, at_ms in entries:
            if at_ms >= before_ms:
                break
            raw = dedupe_key(event_id)
            self.forgotten[raw] = at_ms
            held = self._store.seen(event_id)
            if held is not None and held.at_ms == at_ms:  # else an index entry of a copy replaced since
                self.out.append((dedupe, raw, None))
                self.counts["dedupe_forgotten"] += 1
                newest = at_ms if newest is None else max(newest, at_ms)
        if newest is None:
            return
        since = max(newest + 1, self._memory.complete_since_ms or newest + 1)
        self.complete_since_ms = since
        self._memory = DedupeMemory(self._memory.horizon_ms, since)
        self.out.append((dedupe, COMPLETE_KEY, since.to_bytes(8, "big", signed=True)))

    def _reconcile(
        self, reason: str, detail: str, award: AwardEvent | None, source: Source, record: ConsumerRecord
    ) -> None:
        value = Reconciliation(reason=reason, detail=detail, award=award, source_partition=record.partition,
                               source_offset=record.offset, source_topic=record.topic,
                               raw=record.value,
                               source_region=source.region)  # fmt: skip
        key = totals_key(award.board_id, award.user_id) if award is not None else (record.key or b"")
        self.out.append((self._kafka.topic("reconciliation"), key, self._codec.encode(value)))
        self.counts[f"reconciled:{reason}"] += 1

    def _settle(self) -> None:
        for region, (offset, accepted_at_ms) in self._newest.items():
            self.positions[region] = self._position(region).after_award(offset, accepted_at_ms)
        self._newest.clear()

    def watermarks(self) -> list[Output]:
        """One watermark per (region, partition) this round read, for the end of the transaction."""
        self._settle()
        marks: list[Output] = []
        for region, p in sorted(self.positions.items()):
            if p.offset < 0:
                continue  # only a gap was reported: no offset of that region was read yet
            mark = Watermark(source_partition=self.partition, source_offset=p.offset,
                             accepted_at_ms=p.accepted_at_ms, region=region,
                             heartbeat_at_ms=p.heartbeat_at_ms, gaps=p.gaps)  # fmt: skip
            marks.append((self._kafka.topic("totals"), watermark_key(region), self._codec.encode(mark)))
        return marks

    def store_batch(self, changelog: dict[str, int]) -> StoreBatch:
        """What the store writes once the round's transaction committed."""
        self._settle()
        return StoreBatch(players=self.players, seen=self.seen, sources=self.positions, cutoffs=self.cutoffs,
                          held=self.held, expired=self.expired, days_added=self.days_added - self.days_removed,
                          days_removed=self.days_removed, changelog=changelog, forgotten=self.forgotten,
                          complete_since_ms=self.complete_since_ms)  # fmt: skip
