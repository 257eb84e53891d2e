"""The hints published on ``<prefix>:hints:<board>``: the projector's after every applied batch, and
the lifecycle worker's when the board's status or result version changes (``status``)."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from regions.core.lifecycle import parse_position_name
from regions.core.positions import SourceKey


class _User(msgspec.Struct):
    userId: str
    version: int
    score: int | None = None  # none when the player left the board (``left``)
    left: bool = False


class _Status(msgspec.Struct):
    status: str
    resultVersion: int | None = None


class _Payload(msgspec.Struct):
    boardId: str
    sequence: int
    positions: dict[str, int] = {}
    users: list[_User] = []
    truncated: bool = False
    resync: bool = False
    status: _Status | None = None


_decode = msgspec.json.Decoder(_Payload).decode


@dataclass(frozen=True, slots=True)
class ChangedUser:
    """A player a batch changed: their new score, or none when they left the board (removed, or
    hidden by moderation, whose total is never told)."""

    user_id: str
    score: int | None
    version: int
    left: bool = False


@dataclass(frozen=True, slots=True)
class StatusNews:
    """The board is ``status`` now (OPEN, CLOSING, CLOSED); its newest result is ``result_version``."""

    status: str
    result_version: int | None


@dataclass(frozen=True, slots=True)
class Hint:
    board_id: str
    sequence: int  # per board, +1 for every applied batch that changed something
    positions: dict[SourceKey, int]  # (accepting region, partition) -> offset reflected by this batch
    users: tuple[ChangedUser, ...]
    truncated: bool
    resync: bool = False  # the board was rebuilt: subscribers must refetch
    status: StatusNews | None = None  # the board's lifecycle changed (no positions, no users)


class InvalidHint(ValueError):
    """A message on the hints channel that is not a hint."""


def parse_hint(raw: bytes | str) -> Hint:
    try:
        p = _decode(raw)
        positions = {parse_position_name(k): v for k, v in p.positions.items()}
    except (msgspec.DecodeError, ValueError) as exc:
        raise InvalidHint(str(exc)) from exc
    users = tuple(ChangedUser(u.userId, None if u.left else u.score, u.version, u.left) for u in p.users)
    status = None if p.status is None else StatusNews(p.status.status, p.status.resultVersion)
    return Hint(p.boardId, p.sequence, positions, users, p.truncated, p.resync, status)
