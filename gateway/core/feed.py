"""One board's feed in one process, as pure state: who follows it, what it last saw, which hint
sequence its subscribers were told, and what to tell them after each read. No I/O, no clock; the
hub (``gateway/hub.py``) does the reads and wakes the mailboxes.

Rules kept here:

- **Membership.** A member counts from the moment it joins, before its player's standing is read,
  so the feed is never closed under a joiner. It receives updates once it is ready (its player's
  standing is known, or it follows the board only).
- **Sequences never go backwards for a subscriber.** Updates carry the board's hint sequence,
  offset so that it keeps rising if the upstream count restarts (a projector that lost its state).
  A gap or a restart in the upstream sequence is told as a ``Resync`` first.
- **Status news goes to every member at once.** A status hint (the board began closing, closed, or
  has a new result version) is told as a ``StatusChange`` with the hint's sequence; it needs no read.
- **A projection being rebuilt is not a change.** A read whose asOf is stale (no epoch, or
  rebuilding) shows a partial board: subscribers get one ``Resync`` (``projection_rebuilding``) and
  the last fresh state is kept, so that ranks do not fall to null and back.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from gateway.core.hints import Hint
from gateway.core.updates import (
    PlayerState,
    ResyncNeeded,
    StatusChange,
    TopSignature,
    Update,
    player_updates,
    top_update,
)
from regions.core.positions import merge_offsets
from regions.core.reads import AsOf

M = TypeVar("M", bound=Hashable)


class TooManyPlayers(Exception):
    """This process already follows as many players of the board as it may."""


@dataclass(frozen=True, slots=True)
class BoardSnapshot:
    """One read of a board: its asOf, top K, and the standing of the players asked for."""

    as_of: AsOf
    top: TopSignature
    players: dict[str, PlayerState]


@dataclass(frozen=True, slots=True)
class Round:
    """What the feed must do now: offer ``resync`` to every ready member; then, with a ``hint``,
    read the board (top K and ``users``) and give the snapshot to :meth:`FeedState.observe`."""

    resync: ResyncNeeded | None
    hint: Hint | None
    users: list[str]
    sequence: int  # what members are told for this round
    status: StatusChange | None = None  # offer it to every ready member


Delivery = tuple[str | None, Update]  # (the player whose members get it, or None for every member)


@dataclass(slots=True)
class FeedState(Generic[M]):
    board_id: str
    max_players: int
    _members: dict[M, str | None] = field(default_factory=dict)  # member -> followed player
    _ready: dict[str | None, set[M]] = field(default_factory=dict)  # by followed player
    _waiting: dict[str, set[M]] = field(default_factory=dict)  # player's standing not read yet
    _followers: dict[str, int] = field(default_factory=dict)
    _players: dict[str, PlayerState] = field(default_factory=dict)
    _joining: set[str] = field(default_factory=set)
    _top: TopSignature = ()
    _pending: Hint | None = None
    _status: StatusChange | None = None
    _resync: str | None = None
    _last_upstream: int | None = None
    _offset: int = 0  # added to upstream sequences so that what members are told keeps rising
    _last_told: int = 0
    _stale: bool = False

    # Membership

    def join(self, member: M, user: str | None) -> bool:
        """Register ``member``; True when its player's standing must be read (then call
        :meth:`joined` or :meth:`join_failed`)."""
        read = user is not None and user not in self._players and user not in self._joining
        if read and len(self._players) + len(self._joining) >= self.max_players:
            raise TooManyPlayers(self.board_id)
        self._members[member] = user
        if user is None or user in self._players:
            self._ready.setdefault(user, set()).add(member)
        else:
            self._waiting.setdefault(user, set()).add(member)
        if user is not None:
            self._followers[user] = self._followers.get(user, 0) + 1
            if read:
                self._joining.add(user)
        return read

    def joined(self, user: str, standing: PlayerState) -> None:
        """The player's standing was read: its waiting members are ready."""
        self._joining.discard(user)
        waiting = self._waiting.pop(user, set())
        if user in self._followers:
            self._players.setdefault(user, standing)
            self._ready.setdefault(user, set()).update(waiting)

    def join_failed(self, user: str) -> None:
        self._joining.discard(user)

    def leave(self, member: M) -> bool:
        """Remove ``member``; True when no member is left (joining ones included)."""
        if member not in self._members:
            return not self._members
        user = self._members.pop(member)
        _discard(self._ready, user, member)
        if user is not None:
            _discard(self._waiting, user, member)
            self._followers[user] -= 1
            if not self._followers[user]:
                del self._followers[user]
                self._players.pop(user, None)
        return not self._members

    def ready_members(self, user: str | None = None) -> Iterator[M]:
        """Members ready for updates: every one (``user`` None), or those following ``user``."""
        if user is not None:
            yield from self._ready.get(user, ())
            return
        for group in self._ready.values():
            yield from group

    def __len__(self) -> int:
        return len(self._members)

    # Hints and rounds

    def baseline(self, top: TopSignature) -> None:
        self._top = top

    def hint(self, hint: Hint) -> None:
        """Take a hint without waiting: merged with any not yet read."""
        last = self._last_upstream
        if hint.resync:
            self._resync = "rebuilt"
        elif last is not None and hint.sequence > last + 1:
            self._resync = "gap"
        elif last is not None and hint.sequence <= last:
            self._resync = "sequence_reset"
        if hint.sequence + self._offset <= self._last_told:
            self._offset = self._last_told - hint.sequence + 1
        self._last_upstream = hint.sequence
        self._last_told = hint.sequence + self._offset
        if hint.status is not None:
            news = hint.status
            self._status = StatusChange(self.board_id, news.status, news.result_version, self._last_told)
            return
        if self._pending is not None:
            positions = merge_offsets(self._pending.positions, hint.positions)
            hint = Hint(hint.board_id, hint.sequence, positions, (), True)
        self._pending = hint

    def resync(self, reason: str) -> None:
        """Members must refetch (the upstream feed reconnected, a read failed, the feed restarted);
        the next upstream sequence is not compared with the last one."""
        self._resync = reason
        self._last_upstream = None

    def take(self) -> Round:
        hint, self._pending = self._pending, None
        reason, self._resync = self._resync, None
        status, self._status = self._status, None
        resync = None if reason is None else ResyncNeeded(self.board_id, reason, self._last_told)
        return Round(resync, hint, list(self._players) if hint is not None else [], self._last_told, status)

    def observe(self, snapshot: BoardSnapshot, done: Round) -> list[Delivery]:
        """The updates of a read made for ``done``, compared with the last fresh read."""
        if snapshot.as_of.stale:
            if self._stale:
                return []
            self._stale = True
            return [(None, ResyncNeeded(self.board_id, "projection_rebuilding", done.sequence))]
        self._stale = False
        as_of = snapshot.as_of if done.hint is None else _as_of(snapshot.as_of, done.hint)
        deliveries: list[Delivery] = []
        for user, after in snapshot.players.items():
            before = self._players.get(user)
            if before is None:
                continue
            self._players[user] = after
            changes = player_updates(self.board_id, user, before, after, done.sequence, as_of)
            deliveries += [(user, update) for update in changes]
        top = top_update(self.board_id, self._top, snapshot.top, done.sequence, as_of)
        self._top = snapshot.top
        if top is not None:
            deliveries.append((None, top))
        return deliveries


K = TypeVar("K")


def _discard(groups: dict[K, set[M]], key: K, member: M) -> None:
    group = groups.get(key)
    if group is not None:
        group.discard(member)
        if not group:
            del groups[key]


def _as_of(read: AsOf, hint: Hint) -> AsOf:
    """The read's asOf, moved up to the hint's positions: the projector applied those before publishing."""
    return replace(read, positions=merge_offsets(read.positions, hint.positions), stale=False)
