"""What one round read and wrote: the state its record handlers share, and the records it sends.

Every read goes through this round's changes first and the task's store second, so a record sees
what the records before it in the round did although nothing is stored until the transaction
committed. Every source record has an accepting region and an offset in that region's awards
partition: a local record its own offset, a replicated one the offset the replicator put in its header.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec
from aiokafka import TopicPartition

from regions.core.aggregation import Conflict, DedupeMemory, Forgotten, OutOfRange, PlayerState, Seen
from regions.core.candidates import CandidateList
from regions.core.moderation import Moderation
from regions.core.positions import SourcePosition
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import BlockKey, CutoffKey, DayEntry, StateKey, StoreBatch, TaskStore
from schema.erasure import erasure_token
from schema.lifecycle import HeldCorrection
from schema.records import AwardEvent, Codec, Reconciliation, dedupe_key, pack_seen
from schema.scoped import split_board_id

Output = tuple[str, bytes, bytes | None]  # (topic, key, value; None: a tombstone)
T = TypeVar("T")


class Unprocessable(Exception):
    """A record the round cannot process; it goes to reconciliation with ``reason``."""

    def __init__(self, reason: str, detail: str, award: AwardEvent | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.award = reason, detail, award


def refusal(outcome: Conflict | OutOfRange | Forgotten) -> tuple[str, str]:
    """The reconciliation reason and detail of a record the aggregation refused."""
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


@dataclass(frozen=True, slots=True)
class Source:
    """A source topic: its accepting region, and whether its records are replicated copies."""

    topic: str
    region: str
    replicated: bool


def decode_or_refuse(decode: Callable[[bytes], T], value: bytes, reason: str) -> T:
    """``value`` decoded; a record that does not decode is refused with ``reason``."""
    try:
        return decode(value)
    except msgspec.DecodeError as exc:
        raise Unprocessable(reason, str(exc)) from exc


@dataclass(slots=True, eq=False)
class DayIndex:
    """This round's changes to the day index of ROLLING boards (which players have a bucket of which
    day); an entry is either added or removed, never both."""

    store: TaskStore
    added: set[DayEntry] = field(default_factory=set)
    removed: set[DayEntry] = field(default_factory=set)

    def add(self, entry: DayEntry) -> None:
        self.added.add(entry)
        self.removed.discard(entry)

    def remove(self, entry: DayEntry) -> None:
        self.removed.add(entry)
        self.added.discard(entry)

    def entries(self, board: str, after: int | None, through: int) -> list[DayEntry]:
        """The entries of ``board``'s days after ``after`` through ``through``: the store's and this
        round's (not yet stored), by player then day."""
        low = -1 if after is None else after
        found = set(self.store.players_of_days(board, after, through)) - self.removed
        found |= {e for e in self.added if e[0] == board and low < e[1] <= through}
        return sorted(found, key=lambda e: (e[2], e[1]))


@dataclass(slots=True, eq=False)
class RoundState:
    """What the round of partition ``partition`` read and wrote: the records to send (``out``, in
    order) and the changes to store once they are committed."""

    kafka: KafkaSettings
    codec: Codec
    store: TaskStore
    partition: int
    memory: DedupeMemory
    known: dict[str, SourcePosition]  # the store's positions when the round began
    days: DayIndex
    forget_event_ids: bool = False  # a fault for tests (processor.fault_forget_event_ids)
    players: dict[StateKey, PlayerState] = field(default_factory=dict)
    seen: dict[str, Seen] = field(default_factory=dict)
    positions: dict[str, SourcePosition] = field(default_factory=dict)
    cutoffs: dict[CutoffKey, int] = field(default_factory=dict)  # cutoffs met in this round
    expired: dict[str, int] = field(default_factory=dict)  # ROLLING boards' days expired in this round
    # The boards whose held corrections changed, and all each holds now.
    held: dict[str, tuple[HeldCorrection, ...]] = field(default_factory=dict)
    forgotten: dict[bytes, int | None] = field(default_factory=dict)  # remembered copies this round forgets
    moderated: dict[StateKey, Moderation] = field(default_factory=dict)  # (board, user): actions applied here
    erased_players: set[StateKey] = field(default_factory=set)  # states an erasure removed in this round
    erased: dict[str, bool] = field(default_factory=dict)  # the erasure list's changes in this round
    complete_since_ms: int | None = None  # the memory's completeness bound, when raised here
    # Approximate boards: the sketch blocks changed in this round (absolute counters), candidate lists
    sketch: dict[BlockKey, tuple[int, ...]] = field(default_factory=dict)
    candidates: dict[str, CandidateList] = field(default_factory=dict)
    # Newest (offset, acceptance time) of the awards read per region, folded into ``positions`` at
    # the end of the round: one position update per region instead of one per award.
    newest: dict[str, tuple[int, int]] = field(default_factory=dict)
    out: list[Output] = field(default_factory=list)
    topic_offset: int = -1  # offset of the record being folded, in its source topic
    offsets: dict[TopicPartition, int] = field(default_factory=dict)  # next offset to consume, per source
    counts: Counter[str] = field(default_factory=Counter)

    @classmethod
    def begin(
        cls, kafka: KafkaSettings, codec: Codec, store: TaskStore, partition: int, horizon_ms: int,
        *, forget_event_ids: bool = False,
    ) -> RoundState:  # fmt: skip
        memory = DedupeMemory(horizon_ms, store.complete_since_ms())
        return cls(kafka, codec, store, partition, memory, store.sources(), DayIndex(store),
                   forget_event_ids=forget_event_ids)  # fmt: skip

    def send(self, topic: str, key: bytes, record: msgspec.Struct) -> None:
        """``record`` goes to ``topic`` (a name before prefix and version) in the round's transaction."""
        self.out.append((self.kafka.topic(topic), key, self.codec.encode(record)))

    def reconcile(self, key: bytes, record: Reconciliation) -> None:
        self.send("reconciliation", key, record)
        self.counts[f"reconciled:{record.reason}"] += 1

    def player(self, key: StateKey) -> PlayerState | None:
        known = self.players.get(key)
        if known is not None:
            return known
        return None if self.erased_players and key in self.erased_players else self.store.player(key)

    def is_erased(self, user_id: str) -> bool:
        """The player is on the erasure list (asked only of players without a state: an erasure
        removes every state, so a player with one is not erased)."""
        token = erasure_token(user_id)
        known = self.erased.get(token)
        return known if known is not None else self.store.erased(token)

    def moderation(self, key: StateKey) -> Moderation | None:
        """The player's last moderation action on the board (``key``: the board's id, not a period's)."""
        known = self.moderated.get(key)
        if known is not None:
            return known
        return None if self.erased_players and key in self.erased_players else self.store.moderation(key)

    def hidden(self, board_id: str, user_id: str) -> bool:
        """The player is hidden on the board ``board_id`` (or on the board of the period it names)."""
        moderation = self.moderation((split_board_id(board_id)[0], user_id))
        return moderation is not None and moderation.hidden

    def seen_of(self, event_id: str) -> Seen | None:
        """The copy of ``event_id`` the dedupe memory holds, unless this round forgets it."""
        if self.forget_event_ids:
            return None
        known = self.seen.get(event_id)
        if known is not None:
            return known
        held = self.store.seen(event_id)
        forgotten = self.forgotten.get(dedupe_key(event_id), -1) if self.forgotten else -1
        return None if held is not None and held.at_ms == forgotten else held

    def remember(self, event_id: str, seen: Seen) -> None:
        """The dedupe memory holds ``event_id`` from now on (in the store and its changelog)."""
        self.seen[event_id] = seen
        self.forgotten.pop(dedupe_key(event_id), None)
        packed = pack_seen(seen.digest, seen.at_ms, seen.region, seen.amount)
        self.out.append((self.kafka.topic("dedupe"), dedupe_key(event_id), packed))

    def cutoff(self, key: CutoffKey) -> int | None:
        known = self.cutoffs.get(key)
        return known if known is not None else self.store.cutoff(key)

    def expired_through(self, board: str) -> int | None:
        known = self.expired.get(board)
        return known if known is not None else self.store.expired_through(board)

    def position(self, region: str) -> SourcePosition:
        return self.positions.get(region) or self.known.get(region) or SourcePosition()

    def pass_offset(self, region: str, offset: int) -> None:
        """The record at ``offset`` of ``region``'s awards is dealt with: its position passes it."""
        self.positions[region] = self.position(region).after_other(offset)

    def award_read(self, region: str, offset: int, accepted_at_ms: int) -> None:
        newest = self.newest.get(region, (-1, 0))
        self.newest[region] = (max(newest[0], offset), max(newest[1], accepted_at_ms))

    def settle(self) -> None:
        """Fold the newest award read per region into its position."""
        for region, (offset, accepted_at_ms) in self.newest.items():
            self.positions[region] = self.position(region).after_award(offset, accepted_at_ms)
        self.newest.clear()

    def store_batch(self, changelog: dict[str, int]) -> StoreBatch:
        """What the store writes once the round's transaction committed."""
        self.settle()
        return StoreBatch(players=self.players, seen=self.seen, sources=self.positions, cutoffs=self.cutoffs,
                          held=self.held, expired=self.expired, days_added=self.days.added - self.days.removed,
                          days_removed=self.days.removed, changelog=changelog, forgotten=self.forgotten,
                          moderation=self.moderated, erased_players=self.erased_players, erased=self.erased,
                          complete_since_ms=self.complete_since_ms, sketch=self.sketch,
                          candidates=self.candidates)  # fmt: skip
