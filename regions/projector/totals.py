"""Batches of the totals topic reduced to what the projection needs, and the records it cannot use.

A record the projection cannot use (undecodable, an unknown sort order or tie policy, a total Redis
cannot hold exactly, an empty id) is set aside with its position and reason instead of raising, so
one bad record never stops a partition; the live projector sends it to reconciliation. The checks
are msgspec's, made while decoding, so they cost the hot path next to nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

import msgspec
from aiokafka import ConsumerRecord

from regions.core.boards import MAX_SHARDS, SortOrder, TiePolicy
from regions.core.candidates import exact_note
from regions.core.lifecycle import position_name
from regions.core.ordering import encode
from regions.core.positions import SourceKey, SourcePosition
from regions.stores.redis.projection import ERASED, BoardTotals, ProjectedTotal
from schema.records import (
    CONTROL_PREFIX,
    CorrectionsHeld,
    CutoffReached,
    Erased,
    ExpiryReached,
    Moderated,
    Watermark,
)
from schema.scoped import counted_of, split_board_id
from schema.sketch import CandidateSet, SketchBlock

EXACT_LIMIT = 2**53  # a sorted-set score is a double: exact below this


class ProjectableTotal(msgspec.Struct, frozen=True, kw_only=True, tag="total"):
    """The part of a totals record (``schema.records.PlayerTotal``) the projection needs, with the
    rules it needs them to keep; decoding skips the rest (the dedupe memory)."""

    board_id: Annotated[str, msgspec.Meta(min_length=1)]
    user_id: Annotated[str, msgspec.Meta(min_length=1)]
    total: Annotated[int, msgspec.Meta(gt=-EXACT_LIMIT, lt=EXACT_LIMIT)]
    version: int
    reached: str
    sort_order: SortOrder
    tie_policy: TiePolicy
    shards: Annotated[int, msgspec.Meta(ge=1, le=MAX_SHARDS)] = 1
    removed: bool = False  # a ROLLING board's player with no points left in the window
    metadata: str = ""  # of the award that holds the total (JSON text); empty: none
    hidden: bool = False  # hidden by moderation: no entry, the version still recorded
    estimated: bool = False  # an approximate board's candidate: ``total`` is its estimate
    exact: int | None = None  # the candidate's exact count when verified

    @property
    def absent(self) -> bool:
        """The player has no entry on the board (the version is still recorded)."""
        return self.removed or self.hidden

    @property
    def note(self) -> str:
        """What the projection keeps beside the entry: the award's metadata, or a candidate's
        verified count (``regions.core.candidates.exact_note``); empty: nothing."""
        if self.absent:
            return ""
        return exact_note(self.exact) if self.estimated else self.metadata


def of_board(found: str, board_id: str) -> bool:
    """``found`` is ``board_id`` or one of its periods (``<board>@<key>``), or exactly the period
    ``board_id`` names, or the companion of one of those (an approximate board's ``#counts``)."""
    found = counted_of(found)
    return found == board_id or split_board_id(found)[0] == board_id


decode_totals_record = msgspec.msgpack.Decoder(
    ProjectableTotal | Watermark | CutoffReached | CorrectionsHeld | ExpiryReached | Moderated | Erased
    | SketchBlock | CandidateSet
).decode  # fmt: skip


@dataclass(frozen=True, slots=True)
class Unprojectable:
    """A totals record the projection skips, and why."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    reason: str  # undecodable | invalid (a field breaks a rule, e.g. an unknown sort order)
    detail: str
    raw: bytes | None  # the record's value as it was

    @property
    def where(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"


@dataclass(slots=True)
class TotalsBatch:
    """A batch of the totals topic: the newest version per (board, player), the furthest watermark
    per (accepting region, partition), the close cutoffs reached, and the records set aside. A
    watermark that names no region (written before watermarks named one) is ``region``'s own."""

    region: str = ""
    latest: dict[tuple[str, str], ProjectableTotal] = field(default_factory=dict)
    erased: set[tuple[str, str]] = field(default_factory=set)  # (board, player): a tombstone, after every total
    marks: dict[SourceKey, SourcePosition] = field(default_factory=dict)
    # board -> <region>:<partition> -> offset of the first cutoff marker
    cutoffs: dict[str, dict[str, int]] = field(default_factory=dict)
    unprojectable: list[Unprojectable] = field(default_factory=list)

    def add(self, records: Sequence[ConsumerRecord]) -> None:
        for record in records:
            if record.value is None:
                self._tombstone(record.key or b"")
                continue
            try:
                value = decode_totals_record(record.value)
            except msgspec.ValidationError as exc:
                self._set_aside(record, "invalid", str(exc))
                continue
            except msgspec.DecodeError as exc:
                self._set_aside(record, "undecodable", str(exc))
                continue
            if isinstance(value, Watermark):
                self._mark(value)
                continue
            if isinstance(value, CutoffReached):
                where = position_name(value.region, value.source_partition)
                self.cutoffs.setdefault(value.board_id, {})[where] = value.source_offset
                continue
            if isinstance(
                value, CorrectionsHeld | ExpiryReached | Moderated | Erased | SketchBlock | CandidateSet
            ):
                continue  # the processor's own state: what it changes reaches the projection as totals
            key = (value.board_id, value.user_id)
            known = self.latest.get(key)
            if known is None or value.version > known.version:
                self.latest[key] = value
                self.erased.discard(key)

    def _tombstone(self, key: bytes) -> None:
        """An erased player's state (a tombstone under a control key is the processor's own)."""
        if key.startswith(CONTROL_PREFIX):
            return
        board, _, user = key.decode(errors="replace").partition("|")
        self.latest.pop((board, user), None)
        self.erased.add((board, user))

    def _mark(self, mark: Watermark) -> None:
        key = (mark.region or self.region, mark.source_partition)
        seen = SourcePosition(mark.source_offset, mark.accepted_at_ms, mark.heartbeat_at_ms, mark.gaps)
        known = self.marks.get(key)
        self.marks[key] = seen if known is None else known.merged(seen)

    def _set_aside(self, record: ConsumerRecord, reason: str, detail: str) -> None:
        self.unprojectable.append(
            Unprojectable(
                record.topic, record.partition, record.offset, record.key, reason, detail, record.value
            )
        )

    def only(self, board_id: str) -> None:
        """Keep the totals of one board, with those of its periods (the watermarks stay)."""
        self.latest = {k: v for k, v in self.latest.items() if of_board(k[0], board_id)}
        self.erased = {k for k in self.erased if of_board(k[0], board_id)}

    def by_board(self) -> list[BoardTotals]:
        """The batch's totals per board, encoded for the projection, with the shard count the
        board's awards carry (the most any of them does: what the catalog said last)."""
        boards: dict[str, list[ProjectedTotal]] = {}
        shards: dict[str, int] = {}
        for t in self.latest.values():
            score, member = encode(t.sort_order, t.tie_policy, t.user_id, t.total, t.reached)
            if t.absent:  # leaves the board: no member, the version is still recorded
                score, member = 0.0, ""
            boards.setdefault(t.board_id, []).append(
                ProjectedTotal(t.user_id, t.version, t.total, score, member, t.note)
            )
            shards[t.board_id] = max(shards.get(t.board_id, 1), t.shards)
        for board_id, user_id in sorted(self.erased):
            boards.setdefault(board_id, []).append(ProjectedTotal(user_id, ERASED, 0, 0.0, ""))
            shards.setdefault(board_id, 1)
        return [BoardTotals(b, shards[b], totals) for b, totals in boards.items()]
