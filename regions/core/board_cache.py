"""One rule for caching board definitions read from the catalog, for every service that looks
boards up on a hot path. Pure state; the caller passes the time and does the catalog reads.

A board's status changes (OPEN -> CLOSING -> CLOSED), and callers rely on how old a served answer
can be: an intake refuses a closing board at most ``ttl_s`` after the close began while it can read
the catalog, and at most ``max_stale_s`` after while it cannot. An answer's age counts from the
moment its catalog read began (what the catalog held then, or something newer).

- An answer younger than ``ttl_s / 2`` is served as is.
- From ``ttl_s / 2`` it is still served, and one background refresh is asked for, so a board in
  steady use is refreshed before it expires and its lookups do not wait on the catalog.
- From ``ttl_s`` it is never served while the catalog answers: the caller reads the catalog before
  answering (``Miss``).
- When the catalog cannot be read, the last answer is served only while it is younger than
  ``max_stale_s`` (a hard bound), and the catalog is asked again (in the background) once per
  ``ttl_s`` meanwhile; beyond the bound a lookup fails (``Down``) until the catalog answers, and
  it asks the catalog again no more than once per ``ttl_s`` either.
- An unknown id is remembered for ``ttl_s`` too (``max_stale_s`` while the catalog cannot be read),
  but at most ``max_unknown`` of them (the least recently asked is forgotten first): ids made up by
  clients cannot fill memory.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

from regions.core.boards import Board


@dataclass(frozen=True, slots=True)
class Hit:
    """Answer with ``board`` (None: no such board); with ``refresh``, also refresh it in the background."""

    board: Board | None
    refresh: bool = False


@dataclass(frozen=True, slots=True)
class Miss:
    """Nothing servable is cached: read the catalog before answering."""


@dataclass(frozen=True, slots=True)
class Down:
    """The catalog failed lately and the last answer is past the hard bound: fail without asking it."""


@dataclass(frozen=True, slots=True)
class _Entry:
    board: Board
    read_at: float  # when the catalog read that gave ``board`` began
    failed_at: float | None = None  # the last failed read since then: the catalog is unreachable


@dataclass(slots=True)
class BoardCache:
    ttl_s: float
    max_unknown: int
    max_stale_s: float = float("inf")
    _known: dict[str, _Entry] = field(default_factory=dict)
    _unknown: OrderedDict[str, float] = field(default_factory=OrderedDict)
    _refreshing: set[str] = field(default_factory=set)

    def lookup(self, board_id: str, now: float) -> Hit | Miss | Down:
        entry = self._known.get(board_id)
        if entry is not None:
            return self._lookup_known(board_id, entry, now)
        read_unknown = self._unknown.get(board_id)
        if read_unknown is not None and now - read_unknown < self.ttl_s:
            self._unknown.move_to_end(board_id)
            return Hit(None)
        return Miss()

    def _lookup_known(self, board_id: str, entry: _Entry, now: float) -> Hit | Miss | Down:
        age = now - entry.read_at
        if entry.failed_at is None:
            if age >= self.ttl_s:
                return Miss()
            return Hit(entry.board, refresh=age >= self.ttl_s / 2 and self._start_refresh(board_id))
        retry = now - entry.failed_at >= self.ttl_s
        if age < max(self.max_stale_s, self.ttl_s):
            return Hit(entry.board, refresh=retry and self._start_refresh(board_id))
        return Miss() if retry else Down()

    def _start_refresh(self, board_id: str) -> bool:
        """True once per refresh: the caller starts it."""
        if board_id in self._refreshing:
            return False
        self._refreshing.add(board_id)
        return True

    def answered(self, board_id: str, board: Board | None, read_at: float) -> None:
        """The catalog answered for ``board_id`` (a lookup or a refresh) to a read begun at ``read_at``."""
        self._refreshing.discard(board_id)
        if board is not None:
            self._unknown.pop(board_id, None)
            known = self._known.get(board_id)
            if known is None or known.read_at <= read_at:  # a read begun earlier never wins
                self._known[board_id] = _Entry(board, read_at)
            return
        self._known.pop(board_id, None)
        self._unknown[board_id] = read_at
        self._unknown.move_to_end(board_id)
        while len(self._unknown) > self.max_unknown:
            self._unknown.popitem(last=False)

    def unreachable(self, board_id: str, now: float) -> Hit | None:
        """The catalog could not be read for ``board_id``: the last answer to serve, if there is one
        within the hard bound."""
        self._refreshing.discard(board_id)
        bound = max(self.max_stale_s, self.ttl_s)
        entry = self._known.get(board_id)
        if entry is not None:
            self._known[board_id] = replace(entry, failed_at=now)  # asked again after another ttl_s
            return Hit(entry.board) if now - entry.read_at < bound else None
        read_unknown = self._unknown.get(board_id)
        if read_unknown is not None and now - read_unknown < bound:
            return Hit(None)
        return None

    def forget(self, board_id: str) -> None:
        """The board changed (its status, say): the next lookup reads the catalog again."""
        self._known.pop(board_id, None)
        self._unknown.pop(board_id, None)

    def unknown_ids(self) -> int:
        return len(self._unknown)
