"""What a subscriber is told: updates derived from two snapshots of a board, and their coalescing.

A board's feed reads the top K and every subscribed player's rank after a hint; comparing that
snapshot with the previous one gives the updates. A subscriber's mailbox keeps only the latest
update of each kind, so its memory is bounded whatever the rate of change; a subscriber that has
overwritten too many undelivered updates gets one ``ResyncNeeded`` instead (and keeps the board's
latest ``StatusChange``: a lifecycle change is news that a refetch of the standings would not tell).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from regions.core.reads import AsOf

TOP_K = 10


@dataclass(frozen=True, slots=True)
class ScoreUpdate:
    board_id: str
    user_id: str
    score: int
    rank: int | None
    version: int
    sequence: int
    as_of: AsOf


@dataclass(frozen=True, slots=True)
class RankChange:
    board_id: str
    user_id: str
    old_rank: int | None
    new_rank: int | None
    sequence: int
    as_of: AsOf


@dataclass(frozen=True, slots=True)
class TopKChange:
    board_id: str
    k: int
    sequence: int
    as_of: AsOf


@dataclass(frozen=True, slots=True)
class ResyncNeeded:
    board_id: str
    reason: str
    sequence: int


@dataclass(frozen=True, slots=True)
class StatusChange:
    """The board began closing, closed, or has a new result version (a correction)."""

    board_id: str
    status: str
    result_version: int | None
    sequence: int


Update = ScoreUpdate | RankChange | TopKChange | ResyncNeeded | StatusChange


@dataclass(frozen=True, slots=True)
class PlayerState:
    """A player's standing in one snapshot; all None when the player has no score."""

    rank: int | None = None
    score: int | None = None
    version: int | None = None


TopSignature = tuple[tuple[str, int], ...]  # (userId, score) of the top K, in rank order


def player_updates(
    board_id: str, user_id: str, before: PlayerState, after: PlayerState, sequence: int, as_of: AsOf
) -> list[Update]:
    """ScoreUpdated when the player's total has a new version; RankChanged when the rank moved."""
    updates: list[Update] = []
    if after.version is not None and after.score is not None and after.version != before.version:
        updates.append(
            ScoreUpdate(board_id, user_id, after.score, after.rank, after.version, sequence, as_of)
        )
    if after.rank != before.rank:
        updates.append(RankChange(board_id, user_id, before.rank, after.rank, sequence, as_of))
    return updates


def top_update(
    board_id: str, before: TopSignature, after: TopSignature, sequence: int, as_of: AsOf
) -> TopKChange | None:
    return None if before == after else TopKChange(board_id, TOP_K, sequence, as_of)


class Offered(StrEnum):
    QUEUED = "queued"
    COALESCED = "coalesced"
    RESYNC = "resync"


def _key(update: Update) -> str:
    return type(update).__name__


_ORDER = {"ResyncNeeded": 0, "StatusChange": 1, "ScoreUpdate": 2, "RankChange": 3, "TopKChange": 4}


@dataclass(slots=True)
class Coalescer:
    """A subscriber's pending updates: at most one of each kind, the latest."""

    board_id: str
    resync_after: int
    pending: dict[str, Update] = field(default_factory=dict)
    overwritten: int = 0

    def offer(self, update: Update) -> Offered:
        """Keep ``update`` as the latest of its kind; say whether it replaced an undelivered one."""
        key = _key(update)
        known = self.pending.get(key)
        if isinstance(known, RankChange) and isinstance(update, RankChange):
            update = RankChange(
                update.board_id,
                update.user_id,
                known.old_rank,
                update.new_rank,
                update.sequence,
                update.as_of,
            )
        outcome = Offered.QUEUED
        if known is not None and not isinstance(known, ResyncNeeded):
            self.overwritten += 1
            outcome = Offered.COALESCED
        self.pending[key] = update
        if isinstance(update, RankChange) and update.old_rank == update.new_rank:
            del self.pending[key]
        if self.overwritten >= self.resync_after:
            status = self.pending.get("StatusChange")  # the board's lifecycle is news a refetch may miss
            self.pending = {"ResyncNeeded": ResyncNeeded(self.board_id, "slow_subscriber", update.sequence)}
            if status is not None:
                self.pending["StatusChange"] = status
            self.overwritten = 0
            outcome = Offered.RESYNC
        return outcome

    def drain(self) -> list[Update]:
        updates = sorted(self.pending.values(), key=lambda u: _ORDER[_key(u)])
        self.pending = {}
        self.overwritten = 0
        return updates

    def __len__(self) -> int:
        return len(self.pending)
