"""Erasing a player everywhere, as pure rules. No I/O, no clock (times are arguments, in ms).

- **Asking.** An erasure names a player (an id, as every id) and a reason. It is recorded once per
  player: asking again answers the first, until an operator lifts it; then asking again erases the
  player anew. While it stands, the intakes refuse the player's awards (410 ``player_erased``).
- **Carrying it out** (``next_step``), by the lifecycle worker of the region it was asked in, each
  step resumable after a crash: write an erasure record into every partition of that region's awards
  topic (``awards``); wait until every region's projection positions pass those records
  (``projection:<region>``: its processor removed the player's states, with tombstones in its totals
  topic, and its projector removed the player from Redis); then remove the player's rows from
  Cassandra (``award_history``, ``profiles``, ``archives``); then the erasure is DONE and its row
  forgets the user id.
- **What stays, and until when.** Records of the raw topics (awards, replicated awards, applied,
  reconciliation) keep the player's awards until their retention passes (``raw_records_until``); no
  replay brings them back, as every processor drops an erased player's records. Tombstones of the
  compacted topics remove the player's earlier records there within the topics' compaction bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from regions.core.ids import text_error, user_id_error
from regions.core.lifecycle import MAX_REASON
from regions.core.validation import FieldError

PENDING, DONE, FAILED = "PENDING", "DONE", "FAILED"
AWARDS_STEP = "awards"
ROW_STEPS = ("award_history", "profiles", "archives")


@dataclass(frozen=True, slots=True)
class ErasureStep:
    """How far one store is: ``status`` PENDING, DONE or FAILED, with what was done or went wrong."""

    store: str
    status: str
    detail: str


@dataclass(frozen=True, slots=True)
class ErasureRequest:
    user_id: str
    reason: str


def parse_erasure(user_id: str, reason: str) -> ErasureRequest | list[FieldError]:
    errors = []
    problem = user_id_error(user_id)
    if problem is not None:
        errors.append(FieldError("userId", problem))
    problem = text_error(reason, MAX_REASON)
    if problem is not None:
        errors.append(FieldError("reason", problem))
    return errors or ErasureRequest(user_id, reason)


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
    if any(steps.get(store, ("", ""))[0] != DONE for store in ROW_STEPS):
        return EraseRows()
    return Finish()


def raw_records_until(requested_at_ms: int, retention_ms: int) -> int:
    """When the raw topics no longer hold any award of the player accepted before the erasure."""
    return requested_at_ms + retention_ms


def step_list(steps: Mapping[str, tuple[str, str]], regions: Sequence[str]) -> list[ErasureStep]:
    """Every step of an erasure in the order they are carried out, PENDING where none is recorded."""
    names = [AWARDS_STEP, *(projection_step(r) for r in regions), *ROW_STEPS]
    return [ErasureStep(n, *steps.get(n, (PENDING, ""))) for n in names]
