"""Rank order of a board and its Redis encoding.

Rank order: better total first (higher for DESC boards, lower for ASC), then the tie policy:
``USER_ID`` orders equal totals by user id ascending; ``FIRST_REACHED`` by who reached that total
first (the award's own acceptance time, then its event id: never the log position, so every region
ranks the same awards identically), then user id. The Redis encoding stores ``score`` and ``member``
so that ascending (score, member) order - Redis's own - is exactly rank order.
"""

from __future__ import annotations

from regions.core.boards import SortOrder, TiePolicy

REACHED_WIDTH = 27  # 11 hex digits of milliseconds, then 16 of the event id (or of a log position)


def reached_key(accepted_at_ms: int, event_id: str) -> str:
    """A sortable, fixed-width key of the award that reached a total: its acceptance time, then the
    first 64 bits of its event id. Sorting the keys sorts by (acceptance time, event id)."""
    return f"{accepted_at_ms:011x}{event_id[:16]}"


def reached_position(accepted_at_ms: int, partition: int, offset: int) -> str:
    """A key of the same width from a log position, for tools and fixtures that have no event id."""
    return f"{accepted_at_ms:011x}{partition:04x}{offset:012x}"


def rank_key(
    sort_order: SortOrder, tie_policy: TiePolicy, user_id: str, total: int, reached: str
) -> tuple[int, str, str]:
    """The reference order: sorting by this key ascending is rank order."""
    primary = -total if sort_order is SortOrder.DESC else total
    return (primary, reached if tie_policy is TiePolicy.FIRST_REACHED else "", user_id)


def encode(
    sort_order: SortOrder, tie_policy: TiePolicy, user_id: str, total: int, reached: str
) -> tuple[float, str]:
    """(score, member) for the sorted set. Totals are below 2^53, so the float score is exact."""
    score = float(-total if sort_order is SortOrder.DESC else total)
    member = f"{reached}|{user_id}" if tie_policy is TiePolicy.FIRST_REACHED else user_id
    return score, member


def user_of(tie_policy: TiePolicy, member: str) -> str:
    """The user id inside a sorted-set member."""
    return member[REACHED_WIDTH + 1 :] if tie_policy is TiePolicy.FIRST_REACHED else member


def total_of(sort_order: SortOrder, score: float) -> int:
    """The total a sorted-set score encodes."""
    return int(-score) if sort_order is SortOrder.DESC else int(score)
