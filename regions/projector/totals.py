"""Batches of the totals topic reduced to what the projection needs, and the records it cannot use.

A record the projection cannot use (undecodable, an unknown sort order or tie policy, a total Redis
cannot hold exactly) is set aside with its position and reason instead of raising, so one bad record
never stops a partition; the live projector sends it to reconciliation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec
from aiokafka import ConsumerRecord

from regions.core.boards import SortOrder, TiePolicy
from regions.core.ordering import REACHED_WIDTH, encode
from regions.redis_projection import ProjectedTotal
from schema.records import Codec, ProjectedView, Watermark
from schema.redis_keys import BoardKeys, board_keys

EXACT_LIMIT = 2**53  # a sorted-set score is a double: exact below this
_SORT_ORDERS = frozenset(SortOrder)
_TIE_POLICIES = frozenset(TiePolicy)


@dataclass(frozen=True, slots=True)
class Unprojectable:
    """A totals record the projection skips, and why."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    reason: str  # undecodable | unknown_enum | total_out_of_range | bad_field
    detail: str

    @property
    def where(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"


def unprojectable_reason(view: ProjectedView) -> tuple[str, str] | None:
    """(reason, detail) when a decoded total cannot be projected faithfully; None when it can."""
    if view.sort_order not in _SORT_ORDERS:
        return (
            "unknown_enum",
            f"sort_order {view.sort_order!r} is not one of {', '.join(sorted(_SORT_ORDERS))}",
        )
    if view.tie_policy not in _TIE_POLICIES:
        return (
            "unknown_enum",
            f"tie_policy {view.tie_policy!r} is not one of {', '.join(sorted(_TIE_POLICIES))}",
        )
    if not -EXACT_LIMIT < view.total < EXACT_LIMIT:
        return "total_out_of_range", f"total {view.total} is outside +-2^53"
    if not view.board_id or not view.user_id:
        return "bad_field", "board_id and user_id must not be empty"
    if view.tie_policy == TiePolicy.FIRST_REACHED and len(view.reached) != REACHED_WIDTH:
        return "bad_field", f"reached {view.reached!r} is not {REACHED_WIDTH} characters"
    return None


@dataclass(slots=True)
class TotalsBatch:
    """A batch of the totals topic: the newest version per (board, player), the furthest watermark
    per source partition, and the records set aside."""

    latest: dict[tuple[str, str], ProjectedView] = field(default_factory=dict)
    marks: dict[int, int] = field(default_factory=dict)
    accepted_ms: dict[int, int] = field(default_factory=dict)  # newest acceptance time per partition
    newest_accepted_ms: int = 0
    unprojectable: list[Unprojectable] = field(default_factory=list)

    def add(self, codec: Codec, records: Sequence[ConsumerRecord]) -> None:
        for record in records:
            try:
                value = codec.projected(record.value)
            except msgspec.DecodeError as exc:
                self._set_aside(record, "undecodable", str(exc))
                continue
            if isinstance(value, Watermark):
                self._mark(value)
                continue
            problem = unprojectable_reason(value)
            if problem is not None:
                self._set_aside(record, *problem)
                continue
            key = (value.board_id, value.user_id)
            known = self.latest.get(key)
            if known is None or value.version > known.version:
                self.latest[key] = value

    def _mark(self, mark: Watermark) -> None:
        partition = mark.source_partition
        self.marks[partition] = max(self.marks.get(partition, -1), mark.source_offset)
        self.accepted_ms[partition] = max(self.accepted_ms.get(partition, 0), mark.accepted_at_ms)
        self.newest_accepted_ms = max(self.newest_accepted_ms, mark.accepted_at_ms)

    def _set_aside(self, record: ConsumerRecord, reason: str, detail: str) -> None:
        self.unprojectable.append(
            Unprojectable(record.topic, record.partition, record.offset, record.key, reason, detail)
        )

    def only(self, board_id: str) -> None:
        """Keep the totals of one board (the watermarks stay)."""
        self.latest = {k: v for k, v in self.latest.items() if k[0] == board_id}

    def by_board(
        self, prefix: str, generation: str = ""
    ) -> list[tuple[str, BoardKeys, list[ProjectedTotal]]]:
        boards: dict[str, list[ProjectedTotal]] = {}
        for t in self.latest.values():
            score, member = encode(
                SortOrder(t.sort_order), TiePolicy(t.tie_policy), t.user_id, t.total, t.reached
            )
            boards.setdefault(t.board_id, []).append(
                ProjectedTotal(t.user_id, t.version, t.total, score, member)
            )
        return [(b, board_keys(prefix, b, generation), totals) for b, totals in boards.items()]
