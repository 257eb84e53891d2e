"""The projector's change hints, as published on ``<prefix>:hints:<board>`` after every applied batch."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from regions.core.positions import SourceKey


class _User(msgspec.Struct):
    userId: str
    score: int
    version: int


class _Payload(msgspec.Struct):
    boardId: str
    sequence: int
    positions: dict[str, int] = {}
    users: list[_User] = []
    truncated: bool = False
    resync: bool = False


_decode = msgspec.json.Decoder(_Payload).decode


@dataclass(frozen=True, slots=True)
class ChangedUser:
    user_id: str
    score: int
    version: int


@dataclass(frozen=True, slots=True)
class Hint:
    board_id: str
    sequence: int  # per board, +1 for every applied batch that changed something
    positions: dict[SourceKey, int]  # (accepting region, partition) -> offset reflected by this batch
    users: tuple[ChangedUser, ...]
    truncated: bool
    resync: bool = False  # the board was rebuilt: subscribers must refetch


class InvalidHint(ValueError):
    """A message on the hints channel that is not a hint."""


def _source_key(name: str) -> SourceKey:
    """``<region>:<partition>``, as the projector names a position."""
    region, _, partition = name.rpartition(":")
    if not region or not partition.isdigit():
        raise ValueError(f"position {name!r} is not <region>:<partition>")
    return region, int(partition)


def parse_hint(raw: bytes | str) -> Hint:
    try:
        p = _decode(raw)
        positions = {_source_key(k): v for k, v in p.positions.items()}
    except (msgspec.DecodeError, ValueError) as exc:
        raise InvalidHint(str(exc)) from exc
    users = tuple(ChangedUser(u.userId, u.score, u.version) for u in p.users)
    return Hint(p.boardId, p.sequence, positions, users, p.truncated, p.resync)
