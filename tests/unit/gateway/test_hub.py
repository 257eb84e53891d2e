"""The hub's tasks around the feed state, with an in-process snapshot reader the test drives
(no Redis): a joiner is never left on a closed feed, and a feed that fails is restarted."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import msgspec
import pytest

from gateway import metrics
from gateway.admission import Admission
from gateway.core.feed import BoardSnapshot
from gateway.core.updates import PlayerState, ResyncNeeded, TopKChange, Update
from gateway.hub import HintHub, Mailbox
from regions.core.boards import Board
from regions.core.reads import AsOf
from regions.runtime.settings import GatewaySettings
from schema.redis_keys import hints_channel
from tests.unit.gateway.waiting import until

BOARD = Board("b1", "Board", "local")
FRESH = AsOf("local", {("local", 0): 1}, 1_700_000_000_000, False)


class HandSnapshots:
    def __init__(self) -> None:
        self.top: tuple[tuple[str, int], ...] = ()
        self.fail_next: Exception | None = None
        self.hold: set[str] = set()
        self.release = asyncio.Event()

    async def read(self, board: Board, users: Sequence[str], k: int) -> BoardSnapshot:
        if self.hold & set(users):
            await self.release.wait()
        if self.fail_next is not None:
            failure, self.fail_next = self.fail_next, None
            raise failure
        return BoardSnapshot(FRESH, self.top, {u: PlayerState() for u in users})


def make_hub(snapshots: HandSnapshots) -> HintHub:
    settings = GatewaySettings(hint_min_interval_s=0)
    return HintHub(cast(Any, None), "t", snapshots, settings, restart_pause_s=0)


def publish(hub: HintHub, sequence: int) -> None:
    hint = {"boardId": BOARD.id, "sequence": sequence, "positions": {"local:0": sequence}}
    hub.receive(hints_channel("t", BOARD.id), msgspec.json.encode(hint))


@contextlib.asynccontextmanager
async def following(hub: HintHub, user: str | None, leave: asyncio.Event) -> AsyncIterator[list[Mailbox]]:
    """Subscribe in a task until ``leave`` is set; the list holds the mailbox once subscribed."""
    boxes: list[Mailbox] = []

    async def hold() -> None:
        async with hub.subscribe(BOARD, user) as mailbox:
            boxes.append(mailbox)
            await leave.wait()

    task = asyncio.create_task(hold())
    try:
        yield boxes
    finally:
        leave.set()
        await asyncio.wait_for(task, 5)


async def next_updates(mailbox: Mailbox) -> list[Update]:
    return await asyncio.wait_for(mailbox.next_batch(), 5)


async def test_the_last_subscriber_leaving_while_another_joins_leaves_the_joiner_a_live_feed() -> None:
    snapshots = HandSnapshots()
    snapshots.hold = {"bob"}  # bob's standing is being read when the watcher leaves
    hub = make_hub(snapshots)
    watcher_leaves, joiner_leaves = asyncio.Event(), asyncio.Event()
    async with following(hub, None, watcher_leaves):
        await until(lambda: len(hub.mailbox_depths(BOARD.id)) == 1)
        async with following(hub, "bob", joiner_leaves) as joiner:
            await until(lambda: hub.members(BOARD.id) == 2)
            watcher_leaves.set()
            await until(lambda: hub.members(BOARD.id) == 1)
            snapshots.release.set()
            await until(lambda: bool(joiner))

            snapshots.top = (("bob", 10),)
            publish(hub, 1)
            updates = await next_updates(joiner[0])

    assert [type(u) for u in updates] == [TopKChange]
    assert hub.members(BOARD.id) == 0


async def test_a_feed_that_fails_on_a_bug_is_logged_counted_restarted_and_its_subscribers_resync(
    caplog: pytest.LogCaptureFixture,
) -> None:
    snapshots = HandSnapshots()
    hub = make_hub(snapshots)
    restarts = metrics.FEED_RESTARTS.labels("feed_failed")
    before = restarts._value.get()
    async with following(hub, None, asyncio.Event()) as boxes:
        await until(lambda: bool(boxes))
        snapshots.fail_next = RuntimeError("a bug in a round")
        with caplog.at_level(logging.ERROR, logger="gateway.hub"):
            publish(hub, 1)
            told = await next_updates(boxes[0])
        snapshots.top = (("ann", 5),)
        publish(hub, 2)
        after_restart = await next_updates(boxes[0])

    assert told == [ResyncNeeded(BOARD.id, "feed_failed", 1)]
    assert [type(u) for u in after_restart] == [TopKChange]
    assert restarts._value.get() == before + 1
    [record] = [r for r in caplog.records if r.name == "gateway.hub"]
    assert record.exc_info is not None and "a bug in a round" in str(record.exc_info[1])


async def test_while_push_is_shed_hints_merge_and_are_counted_and_one_read_tells_the_latest() -> None:
    snapshots = HandSnapshots()
    settings = GatewaySettings(
        hint_min_interval_s=0,
        max_concurrent_operations=4,
        reserved_for_mutations=1,
        push_shed_at_operations=1,
    )
    admission = Admission(settings)
    hub = HintHub(cast(Any, None), "t", snapshots, settings, restart_pause_s=0, push=admission)
    reads = 0
    read = snapshots.read

    async def counted(board: Board, users: Sequence[str], k: int) -> BoardSnapshot:
        nonlocal reads
        reads += 1
        return await read(board, users, k)

    snapshots.read = counted  # type: ignore[method-assign]
    shed = metrics.HINTS_SHED._value.get()
    async with following(hub, None, asyncio.Event()) as boxes:
        await until(lambda: bool(boxes))
        before = reads
        assert admission.enter(mutation=False)  # an operation in flight: push is shed
        for sequence in range(1, 6):
            snapshots.top = (("ann", sequence),)
            publish(hub, sequence)
        await asyncio.sleep(0.05)
        during = reads - before
        admission.leave()
        updates = await next_updates(boxes[0])

    assert during == 0 and metrics.HINTS_SHED._value.get() == shed + 5
    assert [type(u) for u in updates] == [TopKChange] and updates[0].sequence == 5
    assert reads - before == 1  # one read of the latest state once push resumed
