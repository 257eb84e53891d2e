"""The state store of one processor task (one partition): its port and an in-memory implementation.

A task's state is players ((board, user) -> total, version, tie order), the dedupe memory (event id
-> digest and acceptance time), the positions of the accepting regions it has read, the close
cutoffs met ((board, accepting region) -> offset of the board's first cutoff marker), the
corrections it holds per board until the board's fold is final in its partition, for ROLLING boards
the newest expired day and an index of which players have points on which day (so an expiry visits
exactly those players), each moderated player's last moderation action per board (few: a store keeps them in memory
too), an index of each player's states by user id and the erasure list (for erasures), for
approximate boards the blocks of each board's sketch and its candidate list (with an index of the
lists each item is on, for an erasure), and the changelog offsets the store reflects. The compacted changelogs in
Kafka are the source of truth: the
store is written only after a transaction committed, and each write carries the changelog offsets
it brings the store to, in one atomic batch. A store is therefore never ahead of Kafka; when it is
behind, the task replays only the changelogs' tail from those offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from regions.core.aggregation import PlayerState, Seen
from regions.core.candidates import CandidateList
from regions.core.moderation import Moderation
from regions.core.positions import SourcePosition
from schema.lifecycle import HeldCorrection
from schema.records import unpack_seen

StateKey = tuple[str, str]
CutoffKey = tuple[str, str]  # (board, accepting region)
DayEntry = tuple[str, int, str]  # (board, day, user): the player has a bucket of that day
BlockKey = tuple[str, int, int]  # (board, row, block) of an approximate board's sketch
STORE_FORMAT = 4
"""What a store's contents mean. 2: players carry ROLLING day buckets, with the day index and
expired days. 3: an index of each player's states by user id, for an erasure. 4: candidate lists
carry exact counts, with an index of the lists each item is on, for an erasure. A store of another
format is wiped and restored from the changelogs."""


@dataclass(frozen=True, slots=True)
class StoreIdentity:
    """Which log a store reflects: a store of another cluster, topic or partition is foreign."""

    cluster_id: str
    changelogs: tuple[str, ...]
    partition: int


@dataclass(slots=True)
class StoreBatch:
    """Changes written atomically. ``changelog`` maps a changelog topic to the next offset to read."""

    players: dict[StateKey, PlayerState] = field(default_factory=dict)
    seen: dict[str, Seen] = field(default_factory=dict)
    # Dedupe changelog records as they are (the event id's 16 bytes -> ``schema.records.pack_seen``),
    # written without decoding: what a restore copies from the changelog.
    packed_seen: dict[bytes, bytes] = field(default_factory=dict)
    sources: dict[str, SourcePosition] = field(default_factory=dict)
    cutoffs: dict[CutoffKey, int] = field(default_factory=dict)
    expired: dict[str, int] = field(default_factory=dict)  # board -> newest expired day (only forward)
    days_added: set[DayEntry] = field(default_factory=set)
    days_removed: set[DayEntry] = field(default_factory=set)
    held: dict[str, tuple[HeldCorrection, ...]] = field(default_factory=dict)  # board -> all it holds now
    moderation: dict[StateKey, Moderation] = field(default_factory=dict)  # (board, user) -> last action
    # States removed by an erasure (with their moderation), before the other changes; and the erasure
    # list's changes: token -> True (erased) or False (lifted)
    erased_players: set[StateKey] = field(default_factory=set)
    erased: dict[str, bool] = field(default_factory=dict)
    changelog: dict[str, int] = field(default_factory=dict)
    complete_since_ms: int | None = None  # raise the dedupe memory's completeness bound to this
    # Remembered copies to forget, before the other changes: the event id's 16 bytes -> the time of
    # the copy to forget (an entry of ``oldest_seen``; a newer copy stays), or None: whatever is held.
    forgotten: dict[bytes, int | None] = field(default_factory=dict)
    # Approximate boards: absolute counters of the sketch blocks changed, and the candidate lists
    sketch: dict[BlockKey, tuple[int, ...]] = field(default_factory=dict)
    candidates: dict[str, CandidateList] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.players or self.seen or self.packed_seen or self.sources or self.cutoffs or self.held
                    or self.sketch or self.candidates or self.changelog or self.expired or self.days_added
                    or self.days_removed
                    or self.forgotten or self.moderation or self.erased_players or self.erased
                    or self.complete_since_ms is not None)  # fmt: skip


class TaskStore(Protocol):
    """The state of one task. Reads see every batch written; writes are atomic."""

    def identity(self) -> StoreIdentity | None:
        """What the store reflects; None for a new (or wiped) store."""

    def reset(self, identity: StoreIdentity) -> None:
        """Forget everything and start reflecting ``identity`` from offset 0 of its changelogs."""

    def changelog_positions(self) -> dict[str, int]:
        """Next offset to read per changelog topic (absent: 0)."""

    def player(self, key: StateKey) -> PlayerState | None: ...

    def seen(self, event_id: str) -> Seen | None: ...

    def sources(self) -> dict[str, SourcePosition]: ...

    def cutoff(self, key: CutoffKey) -> int | None:
        """Offset of the board's first cutoff marker from the region in this partition (None: not met)."""

    def held(self, board_id: str) -> tuple[HeldCorrection, ...]:
        """The board's correction records this task holds, in the order they were met."""

    def moderation(self, key: StateKey) -> Moderation | None:
        """The player's last moderation action applied on the board (None: none)."""

    def states_of(self, user_id: str) -> list[StateKey]:
        """Every state of the player (on every board and period), in key order."""

    def erased(self, token: str) -> bool:
        """The player named ``token`` (``schema.erasure.erasure_token``) is on the erasure list."""

    def complete_since_ms(self) -> int | None:
        """Every copy accepted at or after this time is remembered (None: nothing was forgotten)."""

    def sketch_block(self, key: BlockKey) -> tuple[int, ...] | None:
        """The counters of one block of an approximate board's sketch (None: all zero)."""

    def candidates(self, board_id: str) -> CandidateList:
        """An approximate board's candidate list in this partition (empty, version 0: none yet)."""

    def candidate_lists_of(self, item: str) -> list[str]:
        """The boards (and periods) whose candidate list holds ``item``, in order."""

    def format(self) -> int:
        """The format the store's contents are in (``STORE_FORMAT`` for a new store)."""

    def expired_through(self, board: str) -> int | None:
        """The newest day of a ROLLING board that has left its window here (None: none yet)."""

    def players_of_days(self, board: str, after: int | None, through: int) -> list[DayEntry]:
        """Index entries of the board's days ``after`` < day <= ``through``, in (day, user) order. An
        entry may outlive the bucket it names (the reader checks the player), never the reverse."""

    def write(self, batch: StoreBatch, *, bulk: bool = False) -> None:
        """With ``bulk`` (a restore), the write may stay in memory until ``flush``: after a crash
        the store comes back as of an earlier batch, with that batch's changelog offsets."""

    def flush(self) -> None:
        """Make every write so far durable."""

    def oldest_seen(self, before_ms: int, limit: int) -> list[tuple[str, int]]:
        """Up to ``limit`` (event id, acceptance time) of remembered copies accepted before
        ``before_ms``, oldest first. An entry may name a copy since replaced (``seen`` tells)."""

    def players_count(self) -> int: ...

    def close(self) -> None: ...


class MemoryStore:
    """A store in dictionaries: for tests, and the reference the on-disk store is checked against."""

    def __init__(self) -> None:
        self._clear(None)

    def _clear(self, identity: StoreIdentity | None) -> None:
        self._identity = identity
        self._players: dict[StateKey, PlayerState] = {}
        self._seen: dict[str, Seen] = {}
        self._sources: dict[str, SourcePosition] = {}
        self._cutoffs: dict[CutoffKey, int] = {}
        self._expired: dict[str, int] = {}
        self._days: dict[str, set[tuple[int, str]]] = {}  # board -> (day, user)
        self._held: dict[str, tuple[HeldCorrection, ...]] = {}
        self._moderation: dict[StateKey, Moderation] = {}
        self._erased: set[str] = set()
        self._changelog: dict[str, int] = {}
        self._complete_since: int | None = None
        self._sketch: dict[BlockKey, tuple[int, ...]] = {}
        self._candidates: dict[str, CandidateList] = {}

    def identity(self) -> StoreIdentity | None:
        return self._identity

    def reset(self, identity: StoreIdentity) -> None:
        self._clear(identity)

    def changelog_positions(self) -> dict[str, int]:
        return dict(self._changelog)

    def player(self, key: StateKey) -> PlayerState | None:
        return self._players.get(key)

    def seen(self, event_id: str) -> Seen | None:
        return self._seen.get(event_id)

    def sources(self) -> dict[str, SourcePosition]:
        return dict(self._sources)

    def cutoff(self, key: CutoffKey) -> int | None:
        return self._cutoffs.get(key)

    def held(self, board_id: str) -> tuple[HeldCorrection, ...]:
        return self._held.get(board_id, ())

    def moderation(self, key: StateKey) -> Moderation | None:
        return self._moderation.get(key)

    def states_of(self, user_id: str) -> list[StateKey]:
        return sorted(key for key in self._players if key[1] == user_id)

    def erased(self, token: str) -> bool:
        return token in self._erased

    def complete_since_ms(self) -> int | None:
        return self._complete_since

    def format(self) -> int:
        return STORE_FORMAT

    def sketch_block(self, key: BlockKey) -> tuple[int, ...] | None:
        return self._sketch.get(key)

    def candidates(self, board_id: str) -> CandidateList:
        return self._candidates.get(board_id) or CandidateList()

    def candidate_lists_of(self, item: str) -> list[str]:
        return sorted(b for b, listed in self._candidates.items() if any(i == item for i, _ in listed.items))

    def expired_through(self, board: str) -> int | None:
        return self._expired.get(board)

    def players_of_days(self, board: str, after: int | None, through: int) -> list[DayEntry]:
        low = -1 if after is None else after
        return sorted((board, day, user) for day, user in self._days.get(board, ()) if low < day <= through)

    def write(self, batch: StoreBatch, *, bulk: bool = False) -> None:
        for key in batch.erased_players:
            self._players.pop(key, None)
            self._moderation.pop(key, None)
        for raw_id, at_ms in batch.forgotten.items():
            copy = self._seen.get(raw_id.hex())
            if copy is not None and (at_ms is None or copy.at_ms == at_ms):
                del self._seen[raw_id.hex()]
        self._players.update(batch.players)
        self._seen.update(batch.seen)
        self._seen.update((key.hex(), Seen(*unpack_seen(value))) for key, value in batch.packed_seen.items())
        self._sources.update(batch.sources)
        for key, offset in batch.cutoffs.items():
            self._cutoffs.setdefault(key, offset)  # the first marker stays the cutoff
        for board, day in batch.expired.items():
            self._expired[board] = max(day, self._expired.get(board, day))
        for board, day, user in batch.days_removed:
            self._days.get(board, set()).discard((day, user))
        for board, day, user in batch.days_added:
            self._days.setdefault(board, set()).add((day, user))
        for board_id, held in batch.held.items():
            if held:
                self._held[board_id] = held
            else:
                self._held.pop(board_id, None)
        self._moderation.update(batch.moderation)
        self._erased |= {token for token, erased in batch.erased.items() if erased}
        self._erased -= {token for token, erased in batch.erased.items() if not erased}
        self._sketch.update(batch.sketch)
        self._candidates.update(batch.candidates)
        self._changelog.update(batch.changelog)
        self._raise_complete_since(batch.complete_since_ms)

    def _raise_complete_since(self, since: int | None) -> None:
        if since is not None and (self._complete_since is None or since > self._complete_since):
            self._complete_since = since

    def oldest_seen(self, before_ms: int, limit: int) -> list[tuple[str, int]]:
        old = sorted((s.at_ms, e) for e, s in self._seen.items() if s.at_ms < before_ms)
        return [(e, at) for at, e in old[:limit]]

    def flush(self) -> None:
        pass

    def players_count(self) -> int:
        return len(self._players)

    def close(self) -> None:
        pass
