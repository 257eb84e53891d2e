"""Fan-out of the projector's hints: one upstream PSUBSCRIBE per process, bounded mailboxes per subscriber.

The hub never awaits a subscriber. Hints for a board are merged while its feed is busy; the feed
reads the board once per round (top K plus every subscribed player's rank) and offers the derived
updates to mailboxes, which keep only the latest update of each kind. A subscriber whose socket is
slow therefore stalls only its own stream, and its memory stays a handful of updates.

The rules (membership, sequences, resync decisions, what changed) are pure state in
:mod:`gateway.core.feed`; this module runs the tasks around them, each supervised: a task that
fails is logged, counted in ``lb_gateway_feed_restarts_total`` and restarted, and the subscribers
it served get a ``Resync``.

Under load live push is shed before queries and mutations (``PushGate``, the gateway's admission): while
the gate is shut a feed defers its reads, its hints merging into the latest one (counted in
``lb_gateway_hints_shed_total``), and streams leave their mailboxes alone, so their updates coalesce
as a slow subscriber's do (a Resync after too many). Push resumes with one read of each board's
latest state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol

from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from gateway import metrics
from gateway.core.feed import BoardSnapshot, Delivery, FeedState
from gateway.core.hints import InvalidHint, parse_hint
from gateway.core.updates import TOP_K, Coalescer, Offered, ResyncNeeded, Update
from regions.core.boards import Board
from regions.runtime.settings import GatewaySettings
from regions.stores.redis.connection import ProjectionRedis, open_pubsub
from schema.redis_keys import hints_channel

log = logging.getLogger(__name__)


class FeedUnavailable(Exception):
    """The hints feed of another region's projection cannot serve a subscriber now."""


class FeedSilent(Exception):
    """The upstream feed answered nothing, not even a PING: its connection is dead."""


class Snapshots(Protocol):
    """Reads a board's top K and players' standing in one round trip (``gateway/redis_snapshot.py``)."""

    async def read(self, board: Board, users: Sequence[str], k: int) -> BoardSnapshot: ...


class PushGate(Protocol):
    """Whether live push may go on now (``gateway.admission.Admission``)."""

    @property
    def pushing(self) -> bool: ...

    async def push_turn(self) -> None: ...


class Mailbox:
    """One subscription's pending updates, coalesced, and the event that wakes its stream."""

    def __init__(
        self, board_id: str, user_id: str | None, resync_after: int, push: PushGate | None = None
    ) -> None:
        self.user_id = user_id
        self._box = Coalescer(board_id, resync_after)
        self._ready = asyncio.Event()
        self._push = push

    def offer(self, update: Update) -> None:
        outcome = self._box.offer(update)
        metrics.UPDATES.labels(outcome.value).inc()
        if outcome is Offered.RESYNC:
            metrics.RESYNCS.labels("slow_subscriber").inc()
        elif isinstance(update, ResyncNeeded):
            metrics.RESYNCS.labels(update.reason).inc()
        self._ready.set()

    async def next_batch(self) -> list[Update]:
        """Wait for updates, then take all pending ones (oldest kind first)."""
        await self._ready.wait()
        if self._push is not None:  # while push is shed, updates coalesce here
            await self._push.push_turn()
        self._ready.clear()
        return self._box.drain()

    def __len__(self) -> int:
        return len(self._box)


def _failure(what: str, board_id: str, exc: Exception) -> str:
    """Log a failed task (a Redis error briefly, anything else with its traceback); the reason."""
    if isinstance(exc, RedisError | OSError):
        log.warning("board %s: %s failed (%r); restarting", board_id, what, exc)
        return "read_failed"
    log.error("board %s: %s failed; restarting", board_id, what, exc_info=exc)
    return "feed_failed"


class BoardFeed:
    """The subscribers of one board in this process and the tasks that turn hints into updates."""

    def __init__(
        self,
        board: Board,
        snapshots: Snapshots,
        settings: GatewaySettings,
        restart_pause_s: float,
        push: PushGate | None = None,
    ) -> None:
        self.board = board
        self._push = push
        self._restart_pause_s = restart_pause_s
        self.state: FeedState[Mailbox] = FeedState(board.id, settings.max_tracked_players)
        self._snapshots = snapshots
        self._settings = settings
        self._wake = asyncio.Event()
        self._started = asyncio.Event()  # the baseline top K is read
        self._standing: dict[str, asyncio.Future[None]] = {}  # joining players, until read
        self._to_read: list[str] = []
        self._joiner: asyncio.Task[None] | None = None
        self._task = asyncio.create_task(self._supervise(), name=f"board-feed-{board.id}")

    def join(self, mailbox: Mailbox) -> None:
        """A member from now on (the feed stays open for it); see :meth:`ready`."""
        user = mailbox.user_id
        if self.state.join(mailbox, user) and user is not None:
            standing = self._standing[user] = asyncio.get_running_loop().create_future()
            standing.add_done_callback(lambda f: f.cancelled() or f.exception())  # if nobody waits
            self._to_read.append(user)

    async def ready(self, mailbox: Mailbox) -> None:
        """Wait until the member can be told updates: the board's top K and its player's standing
        are read (players joining together are read in one round trip)."""
        await self._started.wait()
        if self._to_read and self._joiner is None:
            self._joiner = asyncio.create_task(self._read_joining())
        standing = None if mailbox.user_id is None else self._standing.get(mailbox.user_id)
        if standing is not None:
            await asyncio.shield(standing)

    async def _read_joining(self) -> None:
        """The standing of joining players; those joining together are read in one round trip."""
        try:
            while self._to_read:
                users, self._to_read = self._to_read, []
                try:
                    snapshot = await self._snapshots.read(self.board, users, TOP_K)
                except Exception as exc:  # the joiners' subscriptions fail; the feed goes on
                    _failure("reading joining players", self.board.id, exc)
                    for user in users:
                        self.state.join_failed(user)
                        self._standing.pop(user).set_exception(exc)
                    continue
                for user in users:
                    self.state.joined(user, snapshot.players[user])
                    self._standing.pop(user).set_result(None)
        finally:
            self._joiner = None

    def hint_received(self, hint_data: str | bytes) -> None:
        try:
            self.state.hint(parse_hint(hint_data))
        except InvalidHint as exc:
            log.warning("board %s: ignoring a malformed hint: %s", self.board.id, exc)
            return
        if self._push is not None and not self._push.pushing:
            metrics.HINTS_SHED.inc()
        self._wake.set()

    def resync(self, reason: str) -> None:
        self.state.resync(reason)
        self._wake.set()

    def depths(self) -> list[int]:
        """Pending updates of each ready subscriber (each is at most one per kind of update); none
        before the board's baseline top K is read, since only then are changes told."""
        if not self._started.is_set():
            return []
        return [len(m) for m in self.state.ready_members()]

    def _deliver(self, deliveries: list[Delivery]) -> None:
        for user, update in deliveries:
            for mailbox in self.state.ready_members(user):
                mailbox.offer(update)

    async def _supervise(self) -> None:
        while True:
            try:
                await self._follow()
            except Exception as exc:
                reason = _failure("the feed", self.board.id, exc)
                metrics.FEED_RESTARTS.labels(reason).inc()
                self.resync(reason)
                await asyncio.sleep(self._restart_pause_s)

    async def _follow(self) -> None:
        if not self._started.is_set():
            self.state.baseline((await self._snapshots.read(self.board, [], TOP_K)).top)
            self._started.set()
        while True:
            await self._wake.wait()
            if self._push is not None:  # shed: hints merge meanwhile, one read of the latest after
                await self._push.push_turn()
            self._wake.clear()
            await self._round()
            await asyncio.sleep(self._settings.hint_min_interval_s)

    async def _round(self) -> None:
        step = self.state.take()
        if step.resync is not None:
            self._deliver([(None, step.resync)])
        if step.status is not None:
            self._deliver([(None, step.status)])
        if step.hint is not None:
            snapshot = await self._snapshots.read(self.board, step.users, TOP_K)
            self._deliver(self.state.observe(snapshot, step))

    async def close(self) -> None:
        tasks = [t for t in (self._task, self._joiner) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class HintHub:
    def __init__(
        self,
        redis: ProjectionRedis,
        key_prefix: str,
        snapshots: Snapshots,
        settings: GatewaySettings,
        on_change: Callable[[str], None] = lambda board_id: None,
        restart_pause_s: float = 1.0,
        on_status: Callable[[str], None] = lambda board_id: None,
        ready_within_s: float | None = None,
        push: PushGate | None = None,
    ) -> None:
        """``ready_within_s``: the hub follows another region's projection; a subscription is refused
        (``FeedUnavailable``) unless its feed is connected and the board is read within this time.
        ``on_change`` hears of every hint, ``on_status`` of every status hint, by board; ``push``
        sheds live push under load (see the module's docstring)."""
        self._push = push
        self._redis = redis
        self._ready_within_s = ready_within_s
        self._restart_pause_s = restart_pause_s
        self._on_change = on_change
        self._on_status = on_status
        self._pattern = hints_channel(key_prefix, "*")
        self._channel_prefix = hints_channel(key_prefix, "")
        self._snapshots = snapshots
        self._settings = settings
        self._feeds: dict[str, BoardFeed] = {}
        self.connected = False

    @contextlib.asynccontextmanager
    async def subscribe(self, board: Board, user_id: str | None) -> AsyncIterator[Mailbox]:
        """A mailbox of the board's updates; raises TooManyPlayers when this process follows as many
        players of the board as it may, and FeedUnavailable (see ``ready_within_s``)."""
        if self._ready_within_s is not None and not self.connected:
            raise FeedUnavailable("the hints feed of the board's home projection is not connected")
        feed = self._feeds.get(board.id) or self._open(board)
        mailbox = Mailbox(board.id, user_id, self._settings.resync_after_coalesced, self._push)
        try:
            feed.join(mailbox)  # before any await: a feed is never closed under a joiner
        except Exception:
            await self._leave(feed, mailbox)
            raise
        told = False  # counted once it is told updates: its baseline and player are read
        try:
            try:
                async with asyncio.timeout(self._ready_within_s):
                    await feed.ready(mailbox)
            except (TimeoutError, RedisError, OSError) as exc:
                if self._ready_within_s is None:
                    raise
                raise FeedUnavailable(
                    f"the board's home projection was not read within {self._ready_within_s:g} s "
                    f"({type(exc).__name__})"
                ) from exc
            metrics.SUBSCRIPTIONS.inc()
            told = True
            yield mailbox
        finally:
            if told:
                metrics.SUBSCRIPTIONS.dec()
            await self._leave(feed, mailbox)

    def _open(self, board: Board) -> BoardFeed:
        feed = self._feeds[board.id] = BoardFeed(
            board, self._snapshots, self._settings, self._restart_pause_s, self._push
        )
        metrics.FEEDS.set(len(self._feeds))
        return feed

    async def _leave(self, feed: BoardFeed, mailbox: Mailbox) -> None:
        if feed.state.leave(mailbox) and self._feeds.get(feed.board.id) is feed:
            del self._feeds[feed.board.id]
            metrics.FEEDS.set(len(self._feeds))
            await feed.close()

    def mailbox_depths(self, board_id: str) -> list[int]:
        """Pending updates of each of the board's ready subscribers in this process."""
        feed = self._feeds.get(board_id)
        return [] if feed is None else feed.depths()

    def members(self, board_id: str) -> int:
        """Subscribers of the board in this process, those still joining included."""
        feed = self._feeds.get(board_id)
        return 0 if feed is None else len(feed.state)

    def receive(self, channel: str, data: str | bytes) -> None:
        """One message of the upstream hints channel."""
        metrics.HINTS_IN.inc()
        board_id = channel[len(self._channel_prefix) :]
        self._on_change(board_id)
        text = data.decode(errors="replace") if isinstance(data, bytes) else data
        if '"status":{' in text:  # a status hint
            self._on_status(board_id)
        feed = self._feeds.get(board_id)
        if feed is not None:
            feed.hint_received(data)

    async def run(self) -> None:
        """Follow the upstream feed forever, reconnecting after errors (every board's subscribers
        then get a Resync: hints may have been missed meanwhile)."""
        delay, was_connected = 0.2, False
        while True:
            pubsub: PubSub | None = None
            try:
                async with asyncio.timeout(
                    2 * self._settings.hints_ping_interval_s
                ):  # a server that never answers
                    pubsub = await open_pubsub(self._redis)
                    await pubsub.psubscribe(self._pattern)
                if was_connected:
                    for feed in self._feeds.values():
                        feed.resync("upstream_reconnected")
                self._set_connected(True)
                was_connected, delay = True, 0.2
                await self._follow(pubsub)
            except (RedisError, OSError, FeedSilent) as exc:
                log.warning("hints feed lost (%r); reconnecting in %.1fs", exc, delay)
            except Exception:
                log.exception("hints feed failed; restarting in %.1fs", delay)
                metrics.FEED_RESTARTS.labels("upstream_failed").inc()
            finally:
                self._set_connected(False)
                if pubsub is not None:
                    with contextlib.suppress(RedisError, OSError):
                        await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def _follow(self, pubsub: PubSub) -> None:
        """Pass the feed's hints on until it fails. A feed silent for the ping interval is pinged;
        silent for another interval, it is dead (a cut link, or a server that dropped the connection
        during a partition while no word of it reached here) and ``FeedSilent`` ends it."""
        interval, pinged = self._settings.hints_ping_interval_s, False
        while True:
            message = await pubsub.get_message(timeout=interval)
            if message is None:
                if pinged:
                    raise FeedSilent(f"no answer to a PING within {interval:g} s")
                await pubsub.ping()
                pinged = True
                continue
            pinged = False
            if message["type"] == "pmessage":
                self.receive(message["channel"], message["data"])

    def _set_connected(self, connected: bool) -> None:
        self.connected = connected
        metrics.UPSTREAM_CONNECTED.set(1 if connected else 0)
