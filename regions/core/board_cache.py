"""One rule for caching board definitions read from the catalog, for every service that looks
boards up on a hot path. Pure state; the caller passes the time and does the catalog reads.

- An answer younger than ``ttl_s`` is served as is.
- A known board older than ``ttl_s`` is still served, and one background refresh is asked for
  (stale-while-revalidate): definitions change rarely, and a slow catalog must not slow lookups.
- An unknown id is remembered for ``ttl_s`` too, but at most ``max_unknown`` of them (the least
  recently asked is forgotten first): ids made up by clients cannot fill memory.
- When the catalog cannot be read, the last answer is served however old (a refresh is tried again
  only after another ``ttl_s``); with no answer at all the lookup fails.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from regions.core.boards import Board


@dataclass(frozen=True, slots=True)
class Hit:
    """Answer with ``board`` (None: no such board); with ``refresh``, also refresh it in the background."""

    board: Board | None
    refresh: bool = False


@dataclass(frozen=True, slots=True)
class Miss:
    """Nothing usable is cached: read the catalog before answering."""


@dataclass(slots=True)
class BoardCache:
    ttl_s: float
    max_unknown: int
    _known: dict[str, tuple[float, Board]] = field(default_factory=dict)
    _unknown: OrderedDict[str, float] = field(default_factory=OrderedDict)
    _refreshing: set[str] = field(default_factory=set)

    def lookup(self, board_id: str, now: float) -> Hit | Miss:
        known = self._known.get(board_id)
        if known is not None:
            checked, board = known
            stale = now - checked >= self.ttl_s and board_id not in self._refreshing
            if stale:
                self._refreshing.add(board_id)
            return Hit(board, refresh=stale)
        checked_unknown = self._unknown.get(board_id)
        if checked_unknown is not None and now - checked_unknown < self.ttl_s:
            self._unknown.move_to_end(board_id)
            return Hit(None)
        return Miss()

    def answered(self, board_id: str, board: Board | None, now: float) -> None:
        """The catalog answered for ``board_id`` (a lookup or a refresh)."""
        self._refreshing.discard(board_id)
        if board is not None:
            self._unknown.pop(board_id, None)
            self._known[board_id] = (now, board)
            return
        self._known.pop(board_id, None)
        self._unknown[board_id] = now
        self._unknown.move_to_end(board_id)
        while len(self._unknown) > self.max_unknown:
            self._unknown.popitem(last=False)

    def unreachable(self, board_id: str, now: float) -> Hit | None:
        """The catalog could not be read for ``board_id``: the last answer to serve, if there is one."""
        self._refreshing.discard(board_id)
        known = self._known.get(board_id)
        if known is not None:
            self._known[board_id] = (now, known[1])  # next refresh after another ttl_s
            return Hit(known[1])
        if board_id in self._unknown:
            return Hit(None)
        return None

    def forget(self, board_id: str) -> None:
        """The board changed (its status, say): the next lookup reads the catalog again."""
        self._known.pop(board_id, None)
        self._unknown.pop(board_id, None)

    def unknown_ids(self) -> int:
        return len(self._unknown)
