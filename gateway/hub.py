"""Fan-out of the projector's hints: one upstream PSUBSCRIBE per process, bounded mailboxes per subscriber.

The hub never awaits a subscriber. Hints for a board are merged while its feed is busy; the feed
reads the board once per round (top K plus every subscribed player's rank) and offers the derived
updates to mailboxes, which keep only the latest update of each kind. A subscriber whose socket is
slow therefore stalls only its own stream, and its memory stays a handful of updates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway import metrics
from gateway.core.hints import Hint, InvalidHint, merge_positions, parse_hint
from gateway.core.updates import (
    TOP_K,
    Coalescer,
    Offered,
    PlayerState,
    ResyncNeeded,
    TopSignature,
    Update,
    player_updates,
    top_update,
)
from gateway.redis_snapshot import BoardSnapshot, SnapshotReader
from regions.core.boards import Board
from regions.reads import AsOf
from regions.settings import GatewaySettings
from schema.redis_keys import hints_channel

log = logging.getLogger(__name__)


class TooManyPlayers(Exception):
    """This process already follows as many players of the board as it may."""


class Mailbox:
    """One subscription's pending updates, coalesced, and the event that wakes its stream."""

    def __init__(self, board_id: str, user_id: str | None, resync_after: int) -> None:
        self.user_id = user_id
        self._box = Coalescer(board_id, resync_after)
        self._ready = asyncio.Event()

    def offer(self, update: Update) -> None:
        outcome = self._box.offer(update)
        metrics.UPDATES.labels(outcome.value).inc()
        if outcome is Offered.RESYNC or isinstance(update, ResyncNeeded):
            metrics.RESYNCS.labels("slow_subscriber" if outcome is Offered.RESYNC else _reason(update)).inc()
        self._ready.set()

    async def next_batch(self) -> list[Update]:
        """Wait for updates, then take all pending ones (oldest kind first)."""
        await self._ready.wait()
        self._ready.clear()
        return self._box.drain()

    def __len__(self) -> int:
        return len(self._box)


def _reason(update: Update) -> str:
    return update.reason if isinstance(update, ResyncNeeded) else ""


class BoardFeed:
    """The subscribers of one board in this process and the task that turns hints into updates."""

    def __init__(self, board: Board, snapshots: SnapshotReader, settings: GatewaySettings) -> None:
        self.board = board
        self._snapshots = snapshots
        self._settings = settings
        self._mailboxes: dict[str | None, set[Mailbox]] = {}
        self._players: dict[str, PlayerState] = {}
        self._top: TopSignature = ()
        self._pending: Hint | None = None
        self._resync: str | None = None
        self._last_sequence: int | None = None
        self._wake = asyncio.Event()
        self._joining: dict[str, asyncio.Future[PlayerState]] = {}
        self._joiner: asyncio.Task[None] | None = None
        self._baseline = asyncio.ensure_future(self._read_baseline())
        self._task = asyncio.create_task(self._run())

    async def _read_baseline(self) -> None:
        self._top = (await self._snapshots.read(self.board, [], TOP_K)).top

    def __len__(self) -> int:
        return sum(len(m) for m in self._mailboxes.values())

    async def add(self, mailbox: Mailbox) -> None:
        await asyncio.shield(self._baseline)
        user = mailbox.user_id
        if user is not None and user not in self._players:
            state = await asyncio.shield(self._join(user))
            self._players.setdefault(user, state)
        self._mailboxes.setdefault(user, set()).add(mailbox)

    def _join(self, user: str) -> asyncio.Future[PlayerState]:
        """The player's standing now; players joining together are read in one round trip."""
        joining = self._joining.get(user)
        if joining is not None:
            return joining
        if len(self._players) + len(self._joining) >= self._settings.max_tracked_players:
            raise TooManyPlayers(self.board.id)
        joining = self._joining[user] = asyncio.get_running_loop().create_future()
        if self._joiner is None:
            self._joiner = asyncio.create_task(self._read_joining())
        return joining

    async def _read_joining(self) -> None:
        while self._joining:
            batch, self._joining = self._joining, {}
            try:
                snapshot = await self._snapshots.read(self.board, list(batch), TOP_K)
            except RedisError as exc:
                for future in batch.values():
                    future.set_exception(exc)
                continue
            for user, future in batch.items():
                future.set_result(snapshot.players[user])
        self._joiner = None

    def depths(self) -> list[int]:
        """Pending updates of each subscriber (each is at most one per kind of update)."""
        return [len(m) for group in self._mailboxes.values() for m in group]

    def remove(self, mailbox: Mailbox) -> None:
        group = self._mailboxes.get(mailbox.user_id)
        if group is None:
            return
        group.discard(mailbox)
        if not group:
            del self._mailboxes[mailbox.user_id]
            if mailbox.user_id is not None:
                self._players.pop(mailbox.user_id, None)

    def push(self, hint: Hint) -> None:
        """Take a hint without waiting: merged with any not yet processed."""
        last = self._last_sequence
        if hint.resync:
            self._resync = "rebuilt"
        elif last is not None and hint.sequence > last + 1:
            self._resync = "gap"
        elif last is not None and hint.sequence <= last:
            self._resync = "sequence_reset"
        self._last_sequence = hint.sequence
        if self._pending is not None:
            hint = Hint(
                hint.board_id,
                hint.sequence,
                merge_positions(self._pending.positions, hint.positions),
                (),
                True,
            )
        self._pending = hint
        self._wake.set()

    def resync(self, reason: str) -> None:
        self._resync = reason
        self._last_sequence = None
        self._wake.set()

    def _offer_all(self, update: Update) -> None:
        for group in self._mailboxes.values():
            for mailbox in group:
                mailbox.offer(update)

    async def _round(self) -> None:
        hint, self._pending = self._pending, None
        reason, self._resync = self._resync, None
        sequence = hint.sequence if hint is not None else self._last_sequence or 0
        if reason is not None:
            self._offer_all(ResyncNeeded(self.board.id, reason, sequence))
        if hint is None:
            return
        users = [u for u in self._players if u in self._mailboxes]
        snapshot = await self._snapshots.read(self.board, users, TOP_K)
        self._apply(snapshot, sequence, _as_of(snapshot.as_of, hint))

    def _apply(self, snapshot: BoardSnapshot, sequence: int, as_of: AsOf) -> None:
        top = top_update(self.board.id, self._top, snapshot.top, sequence, as_of)
        self._top = snapshot.top
        for user, after in snapshot.players.items():
            before = self._players.get(user)
            if before is None:
                continue
            self._players[user] = after
            for update in player_updates(self.board.id, user, before, after, sequence, as_of):
                for mailbox in self._mailboxes.get(user, ()):
                    mailbox.offer(update)
        if top is not None:
            self._offer_all(top)

    async def _run(self) -> None:
        await self._baseline
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._round()
            except RedisError as exc:
                log.warning("board %s: reading the projection failed (%r)", self.board.id, exc)
                self._resync = "read_failed"
                self._wake.set()
                await asyncio.sleep(1.0)
            await asyncio.sleep(self._settings.hint_min_interval_s)

    async def close(self) -> None:
        tasks = [t for t in (self._task, self._baseline, self._joiner) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _as_of(read: AsOf, hint: Hint) -> AsOf:
    """The read's asOf, moved up to the hint's positions: the projector applied those before publishing."""
    if read.stale:
        return read
    return AsOf(read.region, merge_positions(read.positions, hint.positions), read.newest_accepted_ms, False)


class HintHub:
    def __init__(
        self,
        redis: Redis,
        key_prefix: str,
        snapshots: SnapshotReader,
        settings: GatewaySettings,
        on_change: Callable[[str], None] = lambda board_id: None,
    ) -> None:
        self._redis = redis
        self._on_change = on_change
        self._pattern = hints_channel(key_prefix, "*")
        self._channel_prefix = hints_channel(key_prefix, "")
        self._snapshots = snapshots
        self._settings = settings
        self._feeds: dict[str, BoardFeed] = {}
        self.connected = False

    @contextlib.asynccontextmanager
    async def subscribe(self, board: Board, user_id: str | None) -> AsyncIterator[Mailbox]:
        feed = self._feeds.get(board.id)
        if feed is None:
            feed = self._feeds[board.id] = BoardFeed(board, self._snapshots, self._settings)
            metrics.FEEDS.set(len(self._feeds))
        mailbox = Mailbox(board.id, user_id, self._settings.resync_after_coalesced)
        metrics.SUBSCRIPTIONS.inc()
        try:
            await feed.add(mailbox)
            yield mailbox
        finally:
            metrics.SUBSCRIPTIONS.dec()
            feed.remove(mailbox)
            if not len(feed) and self._feeds.get(board.id) is feed:
                del self._feeds[board.id]
                metrics.FEEDS.set(len(self._feeds))
                await feed.close()

    def mailbox_depths(self, board_id: str) -> list[int]:
        """Pending updates of each of the board's subscribers in this process."""
        feed = self._feeds.get(board_id)
        return [] if feed is None else feed.depths()

    def _route(self, channel: str, data: str | bytes) -> None:
        metrics.HINTS_IN.inc()
        board_id = channel[len(self._channel_prefix) :]
        self._on_change(board_id)
        feed = self._feeds.get(board_id)
        if feed is None:
            return
        try:
            feed.push(parse_hint(data))
        except InvalidHint as exc:
            log.warning("ignoring a malformed hint on %s: %s", channel, exc)

    async def run(self) -> None:
        """Follow the upstream feed forever, reconnecting after Redis errors."""
        delay, was_connected = 0.2, False
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.psubscribe(self._pattern)
                if was_connected:
                    for feed in self._feeds.values():
                        feed.resync("upstream_reconnected")
                self._set_connected(True)
                was_connected, delay = True, 0.2
                async for message in pubsub.listen():
                    if message["type"] == "pmessage":
                        self._route(message["channel"], message["data"])
            except (RedisError, OSError) as exc:
                log.warning("hints feed lost (%r); reconnecting in %.1fs", exc, delay)
            finally:
                self._set_connected(False)
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    def _set_connected(self, connected: bool) -> None:
        self.connected = connected
        metrics.UPSTREAM_CONNECTED.set(1 if connected else 0)
