"""Records every service shares: what travels on the platform's Kafka topics.

msgspec Structs: frozen, compact, and decoded without per-field Python code on hot paths.
"""

from __future__ import annotations

import msgspec


class AwardEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An accepted award on the awards topic (key ``boardId|userId``).

    ``amount`` is the delta of a SUM board or the score of a MAX/MIN board.
    """

    event_id: str
    digest: str
    board_id: str
    match_id: str
    user_id: str
    award_type: str
    amount: int
    occurred_at_ms: int | None
    region: str
    accepted_at_ms: int


class SeenEvent(msgspec.Struct, frozen=True, array_like=True):
    """One recently applied event id with its payload digest, kept for the dedupe horizon."""

    event_id: str
    digest: str
    at_ms: int


class PlayerTotal(msgspec.Struct, frozen=True, kw_only=True):
    """Versioned absolute total of one player on one board: the totals topic value.

    The totals topic is also the processor's compacted changelog, so the record carries the whole
    state of the key, dedupe memory included. ``version`` grows by one per applied award.
    """

    board_id: str
    user_id: str
    total: int
    version: int
    reached: str
    recent: tuple[SeenEvent, ...]
    source_partition: int
    source_offset: int
    event_id: str
