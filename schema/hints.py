"""The change hints the projector publishes on ``<prefix>:hints:<board>`` (read by the gateway's hub).

A hint's ``sequence`` is the board's counter in Redis plus the base of the projection's epoch, so it
never goes backwards for a subscriber, across a Redis wipe included:

- The base of an epoch is the wall time, in microseconds, at which the epoch began.
- A board's counter grows by one per script call that changed the board, and Redis runs far fewer
  than one script call per microsecond; so after an epoch has lasted D microseconds, its sequences
  are below ``base + D``, which is at most the next epoch's base. (This holds while the projector
  hosts' clocks do not step back by more than an epoch's margin, which NTP-disciplined clocks do not.)
- It stays exact in JSON and in GraphQL's ``Long`` (2^53): the base is about 1.8e15 today, and a
  counter is below the microseconds elapsed since its key was created, so a sequence stays below
  twice the current time in microseconds, under 2^53 until the year 2112.

A ``resync`` hint follows a rebuild: the board's keys were replaced, so subscribers refetch. A
``status`` hint (published by the lifecycle worker, on the same channel and counter) says the board
began closing, closed, or has a new result version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec

from schema.redis_keys import position_field


class ChangedTotal(Protocol):
    """What a hint tells of a changed player (the projector's decoded totals record)."""

    @property
    def user_id(self) -> str: ...
    @property
    def total(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def absent(self) -> bool:
        """The player has no entry (a rolling board's player with no points left, or one hidden by
        moderation): the hint says they left, and never their total."""
        ...


MAX_HINT_USERS = 64

_encode = msgspec.json.Encoder().encode


def sequence_base(now_us: int) -> int:
    """The hint sequence base of an epoch that begins at ``now_us`` (wall time, microseconds)."""
    return now_us


def changes_hint(
    board_id: str, sequence: int, positions: dict[tuple[str, int], int], changed: Sequence[ChangedTotal]
) -> bytes:
    """A batch changed these players' totals; ``positions`` are the offsets the batch reflects,
    named ``<region>:<partition>`` as in the positions hash. A player who left the board (``absent``:
    removed, or hidden) is named with ``left`` and no score, whatever their total; one who comes back
    (shown again) is named as a new entry, with their score."""
    hint = {
        "boardId": board_id, "sequence": sequence,
        "positions": {position_field(r, p): o for (r, p), o in positions.items()},
        "users": [_user(t) for t in changed[:MAX_HINT_USERS]],
        "truncated": len(changed) > MAX_HINT_USERS,
    }  # fmt: skip
    return _encode(hint)


def _user(total: ChangedTotal) -> dict[str, object]:
    if total.absent:
        return {"userId": total.user_id, "version": total.version, "left": True}
    return {"userId": total.user_id, "score": total.total, "version": total.version}


def resync_hint(board_id: str, sequence: int) -> bytes:
    """The board was rebuilt: whatever a subscriber derived from earlier reads must be refetched."""
    return _encode({"boardId": board_id, "sequence": sequence, "resync": True})


def status_hint(board_id: str, sequence: int, status: str, result_version: int | None) -> bytes:
    """The board's lifecycle changed: it is ``status`` now, its newest result ``result_version``."""
    return _encode(
        {
            "boardId": board_id,
            "sequence": sequence,
            "status": {"status": status, "resultVersion": result_version},
        }
    )
