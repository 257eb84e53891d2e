"""Replies of ``read_window`` (``schema/lua/read_window.lua``) as values: windows of ranked rows,
and the many-player forms' answers. ``Moved`` when a shard answered that its layout is no longer live."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from regions.core.player_lists import Found
from regions.core.reads import Window


class Moved(Exception):
    """A shard answered that its layout is no longer live."""


def window_of(reply: Any) -> Window | None:
    """A ``read_window`` reply as a window; None when the player has no score; Moved when the
    layout read was swapped out."""
    if reply[0] == "moved":
        raise Moved
    if reply[0] == "none":
        return None
    rows = [(reply[i], reply[i + 1], reply[i + 2], reply[i + 3] or None) for i in range(5, len(reply), 4)]
    return Window(int(reply[1]), int(reply[2]), int(reply[3]), rows, int(reply[4]))


def counted(reply: Any) -> int:
    """The shard's size in a ``players`` or ``counts`` reply (Moved when swapped out)."""
    if reply[0] == "moved":
        raise Moved
    return int(reply[1])


def found_players(users: Sequence[str], reply: Any) -> dict[str, Found]:
    """The players of a ``players`` reply that have a score."""
    found, at = {}, 2
    for user in users:
        if int(reply[at]) < 0:
            at += 1
            continue
        rank, member, score, version, above, metadata = reply[at : at + 6]
        found[user] = Found(int(rank), member, score, version, int(above), metadata or None)
        at += 6
    return found


def full_window(reply: Any) -> Window:
    window = window_of(reply)
    if window is None:
        raise ValueError("read_window answered 'none' to a read that always has an answer")
    return window


EMPTY = Window(-1, 0, 0, [], 0)
