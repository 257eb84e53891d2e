"""Erasing a player everywhere, as pure rules. No I/O, no clock (times are arguments, in ms).

- **Asking.** An erasure names a player (an id, as every id) and a reason. It is recorded once per
  player: asking again answers the first, until an operator lifts it; then asking again erases the
  player anew. While it stands, the intakes refuse the player's awards (410 ``player_erased``).
- **Carrying it out** (``next_step``), by the lifecycle worker of the region it was asked in, each
  step resumable after a crash: write an erasure record into every partition of that region's awards
  topic (``awards``); wait until every region's projection positions pass those records
  (``projection:<region>``: its processor removed the player's states, with tombstones in its totals
  topic, and its projector removed the player from Redis); then remove the player's rows from
  Cassandra (``award_history``, ``profiles``, ``archives``, ``moderation``); then the erasure is DONE and its row
  forgets the user id.
- **What stays, and until when.** Records of the raw topics (awards, replicated awards, applied,
  reconciliation) keep the player's awards until their retention passes (``raw_records_until``); no
  replay brings them back, as every processor drops an erased player's records. Tombstones of the
  compacted topics remove the player's earlier records there within the topics' compaction bound.

Erasing the rows of archived results (``regions.actions.erase_archives``):

- ``closed_up``: a result without the player, ranks closed up. It also drops a repeated player, so
  a version whose chunks were rewritten only in part (a crash mid-rewrite leaves one entry in two
  adjacent chunks) comes out right when erased again: the rewrite is safe to repeat.
- An erasure publishes its result version through ``board_corrections`` like a correction, under
  ``erasure_id``: a one-way digest, so that table never holds the user id, yet an interrupted
  erasure finds the version it claimed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from regions.core.lifecycle import MAX_REASON
from regions.core.results import ResultEntry
from regions.core.validation import FieldError, player_action_errors

ERASURE_PREFIX = "erasure:"
ERASURE_REASON = "erasure"


class ErasureStatus(StrEnum):
    PENDING = "PENDING"
    DONE = "DONE"
    FAILED = "FAILED"


PENDING, DONE, FAILED = ErasureStatus.PENDING, ErasureStatus.DONE, ErasureStatus.FAILED
AWARDS_STEP = "awards"
ERASED_STORES = ("award_history", "profiles", "archives", "moderation")  # the Cassandra steps, after every region's


@dataclass(frozen=True, slots=True)
class ErasureStep:
    """How far one store is: ``status`` PENDING, DONE or FAILED (an ErasureStatus), with what was
    touched, or the error and what to do next. Erasing again after DONE touches nothing and is DONE."""

    store: str
    status: str
    detail: str


@dataclass(frozen=True, slots=True)
class ErasureRequest:
    user_id: str
    reason: str


def parse_erasure(user_id: str, reason: str) -> ErasureRequest | list[FieldError]:
    return player_action_errors(user_id, reason, MAX_REASON) or ErasureRequest(user_id, reason)


def projection_step(region: str) -> str:
    return f"projection:{region}"


@dataclass(frozen=True, slots=True)
class WriteRecords:
    """Write the erasure records into every partition of the asking region's awards topic."""


@dataclass(frozen=True, slots=True)
class AwaitRegions:
    """Some regions' projections have not passed the records yet: region -> how far it is."""

    waiting: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class EraseRows:
    """Every region removed the player: remove its rows from Cassandra."""


@dataclass(frozen=True, slots=True)
class Finish:
    """Every step is DONE."""


Step = WriteRecords | AwaitRegions | EraseRows | Finish


def behind(written: Mapping[int, int], reached: Mapping[int, int]) -> list[int]:
    """The partitions whose erasure record (``written``: partition -> offset) a region's positions
    (``reached``: partition -> offset of the asking region's awards) have not passed."""
    return sorted(p for p, offset in written.items() if reached.get(p, -1) < offset)


def next_step(
    written: Mapping[int, int] | None,
    reached: Mapping[str, Mapping[int, int]],
    steps: Mapping[str, tuple[str, str]],
) -> Step:
    """What the erasure does next, from where its records landed, each region's positions of the
    asking region's awards, and its steps so far."""
    if written is None:
        return WriteRecords()
    waiting = {}
    for region, positions in sorted(reached.items()):
        late = behind(written, positions)
        if late:
            waiting[region] = f"partitions {late} have not passed the erasure yet"
    if waiting:
        return AwaitRegions(waiting)
    if any(steps.get(store, ("", ""))[0] != DONE for store in ERASED_STORES):
        return EraseRows()
    return Finish()


def raw_records_until(requested_at_ms: int, retention_ms: int) -> int:
    """When the raw topics no longer hold any award of the player accepted before the erasure."""
    return requested_at_ms + retention_ms


def step_list(steps: Mapping[str, tuple[str, str]], regions: Sequence[str]) -> list[ErasureStep]:
    """Every step of an erasure in the order they are carried out, PENDING where none is recorded."""
    names = [AWARDS_STEP, *(projection_step(r) for r in regions), *ERASED_STORES]
    return [ErasureStep(n, *steps.get(n, (PENDING, ""))) for n in names]


def erasure_id(board_id: str, user_id: str, base_version: int) -> str:
    """The correction id of the version that erases ``user_id`` from ``base_version`` of the board."""
    digest = hashlib.sha256(f"{board_id}\x00{base_version}\x00{user_id}".encode()).hexdigest()[:32]
    return f"{ERASURE_PREFIX}{digest}"


def is_erasure(correction_id: str) -> bool:
    """Whether a correction's version is an erasure's (published by the erasure, not the worker)."""
    return correction_id.startswith(ERASURE_PREFIX)


def closed_up(entries: Iterable[ResultEntry], user_id: str) -> list[ResultEntry]:
    """The entries in rank order without ``user_id`` and without a player seen already."""
    seen: set[str] = set()
    kept = []
    for entry in entries:
        if entry.user_id != user_id and entry.user_id not in seen:
            seen.add(entry.user_id)
            kept.append(entry)
    return kept


def needs_rewrite(entries: list[ResultEntry], user_id: str) -> bool:
    """Whether a version's entries hold the player, or a player twice (an interrupted rewrite)."""
    return len(closed_up(entries, user_id)) != len(entries)


def in_chunks(entries: list[ResultEntry], size: int) -> list[tuple[int, list[ResultEntry]]]:
    """(chunk number, entries) of a result: chunk ``i`` holds ranks ``i*size+1 .. (i+1)*size``."""
    return [(i // size, entries[i : i + size]) for i in range(0, len(entries), size)]
