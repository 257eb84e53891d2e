"""The projection's Redis adapter and control keys against the real Redis (this test's key prefix)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from redis.asyncio import Redis, RedisCluster

from regions.core.boards import Board, TiePolicy
from regions.core.ordering import encode, reached_position
from regions.core.paging import PageRequest
from regions.core.positions import SourcePosition
from regions.core.reads import AsOf
from regions.projector.rebuild import begin_after_loss, rebuild_to_run
from regions.runtime.settings import Settings
from regions.stores.redis.control import (
    Lease,
    LeaseLost,
    ProjectionControl,
    RebuildCause,
    RebuildRequest,
    RebuildState,
)
from regions.stores.redis.layouts import Layout, LayoutMoved, ShardLost
from regions.stores.redis.links import Command
from regions.stores.redis.projection import BoardTotals, ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader
from regions.stores.redis.rounds import rounds_of
from schema.redis_keys import board_keys, shard_of, shard_tag


async def _forget_everything(redis: Redis | RedisCluster, prefix: str) -> None:
    """What FLUSHALL does to this test's keys."""
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*")]
    if keys:
        await redis.delete(*keys)


async def _lose_shard(redis: Redis | RedisCluster, prefix: str, board: str, shard: int) -> None:
    """What a Redis Cluster master that restarts empty does to the keys of one shard (its hash tag)."""
    keys = [k async for k in redis.scan_iter(match=shard_tag(prefix, board, shard) + "*")]
    assert keys
    await redis.delete(*keys)


@pytest.mark.parametrize("lost", [0, 2])  # the board's own tag (hint sequence, cutoffs), another shard
async def test_a_shard_that_lost_its_keys_is_stale_for_readers_and_refuses_the_projector(
    settings: Settings, redis_client: Redis, lost: int
) -> None:
    prefix, region = settings.redis.key_prefix, settings.region
    projection, board = RedisProjection(redis_client, prefix), Board("lossy", "Lossy", region, shards=3)
    users = [f"u{i}" for i in range(30)]
    await projection.start_epoch("e1")
    await projection.apply(board.id, [ProjectedTotal(u, 1, i, -i, u) for i, u in enumerate(users)], 3)
    assert await projection.advance("e1", {(region, 0): SourcePosition(30)})
    reader = RankReader(projection, prefix, region)
    assert not (await reader.top(board, 50)).as_of.stale
    layout = await projection.layouts.live_one(board.id)

    await _lose_shard(redis_client, prefix, board.id, lost)

    fresh_reader = RankReader(RedisProjection(redis_client, prefix), prefix, region)  # nothing cached
    for r in (reader, fresh_reader):
        page = await r.top(board, 50)
        assert page.as_of.stale and page.as_of.positions and page.entries == []
        survivor = next(u for u in users if shard_of(u, 3) != lost)
        entry, as_of = await r.player(board, survivor)
        assert entry is None and as_of.stale
        as_of, _, _ = await r.windows(board, [survivor], 10)
        assert as_of.stale
    assert await projection.layouts.lost(await projection.layouts.named()) == [layout]
    victim = next(u for u in users if shard_of(u, 3) == lost)
    with pytest.raises(ShardLost):  # neither written into the emptied shard nor laid out anew
        await projection.apply(board.id, [ProjectedTotal(victim, 2, 99, -99.0, victim)], 3)
    assert layout is not None and await projection.layouts.live_one(board.id) == layout
    assert await redis_client.exists(layout.shard(prefix, lost).bucket(victim)) == 0
    with pytest.raises(ShardLost):  # nor read as a player without a score
        await projection.total_of(board.id, victim)


async def test_a_fresh_layout_whose_shard_lost_its_keys_is_not_swapped_in(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    await projection.apply("lossy-swap", [ProjectedTotal("old", 1, 1, -1.0, "old")])
    live = await projection.layouts.live_one("lossy-swap")
    fresh = Layout("lossy-swap", "g1", 2)
    await projection.layouts.prepare([fresh])
    await projection.apply_fresh([(fresh, [ProjectedTotal(f"n{i}", 1, i, -i, f"n{i}") for i in range(20)])])

    await _lose_shard(redis_client, prefix, "lossy-swap", 1)

    with pytest.raises(ShardLost):
        await projection.apply_fresh([(fresh, [ProjectedTotal("n1", 2, 5, -5.0, "n1")])])
    with pytest.raises(ShardLost):
        await projection.layouts.swap(fresh)
    projection.layouts.forget()
    assert await projection.layouts.live_one("lossy-swap") == live
    assert await projection.count("lossy-swap") == 1


async def test_a_new_epoch_after_a_loss_says_rebuilding_until_the_rebuild_completes(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection, control = RedisProjection(redis_client, prefix), ProjectionControl(redis_client, prefix)

    positions, request = await rebuild_to_run(projection, control)

    assert request is not None and request.cause is RebuildCause.LOST and request.board == ""
    stored = await projection.positions()
    assert stored == positions and stored.rebuilding and stored.offsets == {} and stored.epoch
    assert await control.rebuild() == request
    assert positions.epoch is not None
    assert await projection.advance(positions.epoch, {("eu", 0): SourcePosition(3, accepted_at_ms=5)})
    assert (await projection.positions()).rebuilding  # positions alone do not end a rebuild
    assert await projection.advance(
        positions.epoch, {("us", 1): SourcePosition(2, accepted_at_ms=6)}, completes_rebuild=True
    )
    after = await projection.positions()
    assert (after.rebuilding, after.offsets, after.newest_accepted_ms) == (
        False,
        {("eu", 0): 3, ("us", 1): 2},
        6,
    )
    assert not await projection.advance(
        "another-epoch", {("eu", 0): SourcePosition(9)}, completes_rebuild=True
    )


async def test_each_field_of_a_position_only_moves_forward(settings: Settings, redis_client: Redis) -> None:
    projection = RedisProjection(redis_client, settings.redis.key_prefix)
    await projection.start_epoch("e1")
    assert await projection.advance("e1", {("eu", 0): SourcePosition(10, 500, 900, 1)})
    assert await projection.advance(
        "e1", {("eu", 0): SourcePosition(7, 600, 800, 0), ("us", 0): SourcePosition(4)}
    )

    stored = await projection.positions()

    assert stored.marks == {("eu", 0): SourcePosition(10, 600, 900, 1), ("us", 0): SourcePosition(4)}
    assert stored.newest_accepted_ms == 600


async def test_hint_sequences_never_go_backwards_across_a_loss(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection, control = RedisProjection(redis_client, prefix), ProjectionControl(redis_client, prefix)
    published = []
    for round_ in range(3):
        positions, _ = await begin_after_loss(projection, control)
        for version in range(1, 4):
            result = await projection.apply(
                "seq-board", [ProjectedTotal("u", version + 10 * round_, 1, -1.0, "u")]
            )
            published.append(positions.sequence_base + result.sequence)
        await _forget_everything(redis_client, prefix)

    assert published == sorted(published) and len(set(published)) == len(published)


async def test_a_fresh_layout_leaves_the_live_sequence_alone_and_swaps_in_whole(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    await projection.apply("swap-board", [ProjectedTotal("old", 1, 1, -1.0, "old")])
    live = await projection.layouts.live_one("swap-board")
    fresh = Layout("swap-board", "g1", 3)
    await projection.layouts.prepare([fresh])

    assert await projection.apply_fresh(
        [(fresh, [ProjectedTotal(f"new{i}", 2, i, -i, f"new{i}") for i in range(9)])]
    )
    assert await redis_client.get(board_keys(prefix, "swap-board").sequence) == "1"
    assert await projection.count("swap-board") == 1  # the live layout answers until the swap
    assert await projection.layouts.swap(fresh) == live

    assert await projection.count("swap-board") == 9
    assert await projection.version_of("swap-board", "new4") == 2
    assert await projection.version_of("swap-board", "old") is None
    assert await projection.next_sequences(["swap-board"]) == [2]
    assert live is not None and await projection.layouts.retired() == [live]
    old = live.shard(prefix, 0)
    assert await redis_client.exists(old.ranking, old.bucket("old")) == 2
    assert await projection.layouts.delete_retired() == 1
    assert await redis_client.exists(old.ranking, old.bucket("old")) == 0
    assert await projection.layouts.retired() == []


async def test_a_write_for_a_layout_swapped_out_is_refused_and_goes_to_the_new_one(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    writer, late = RedisProjection(redis_client, prefix), RedisProjection(redis_client, prefix)
    await writer.apply("late-board", [ProjectedTotal("ann", 1, 1, -1.0, "ann")])
    old = await late.layouts.live_one("late-board")  # a writer that knows the first layout
    fresh = Layout("late-board", "g2", 2)
    await writer.layouts.prepare([fresh])
    await writer.apply_fresh([(fresh, [ProjectedTotal("ann", 1, 1, -1.0, "ann")])])
    await writer.layouts.swap(fresh)
    assert old is not None

    with pytest.raises(LayoutMoved):  # the old layout's scripts refuse: nothing applied there
        await late.apply_fresh([(old, [ProjectedTotal("ann", 5, 50, -50.0, "ann")])])
    [result] = await late.apply_live(
        [BoardTotals("late-board", 1, [ProjectedTotal("ann", 2, 20, -20.0, "ann")])]
    )

    assert result.users == ["ann"]  # applied to the layout that is live now, found again
    assert await late.layouts.live_one("late-board") == fresh
    assert (await writer.total_of("late-board", "ann"), await writer.version_of("late-board", "ann")) == (
        20,
        2,
    )
    old_keys = old.shard(prefix, 0)
    assert await redis_client.zscore(old_keys.ranking, "ann") == -1.0  # the old keys took nothing


async def test_one_lease_holder_at_a_time(settings: Settings, redis_client: Redis) -> None:
    control = ProjectionControl(redis_client, settings.redis.key_prefix)
    first, second = Lease(control, "first", 5), Lease(control, "second", 5)

    assert await first.try_acquire()
    assert not await second.try_acquire()
    assert await control.lease_holder() == "first"
    await first.check()
    await first.release()
    assert await control.lease_holder() is None
    assert await second.try_acquire()
    await second.release()

    now = [0.0]
    stale = Lease(control, "stale", 5, clock=lambda: now[0])
    assert await stale.try_acquire()
    await control.release_lease("stale")
    assert await control.hold_lease("usurper", 5)
    await stale.check()  # within half its life the lease is trusted without asking Redis
    now[0] = 3.0  # a long pause later
    with pytest.raises(LeaseLost):
        await stale.check()
    await stale.release()
    assert await control.lease_holder() == "usurper"


async def test_asking_for_a_rebuild_while_one_is_active_returns_the_active_one(
    settings: Settings, redis_client: Redis
) -> None:
    control = ProjectionControl(redis_client, settings.redis.key_prefix)
    first = RebuildRequest.new(RebuildCause.REQUESTED, "a")

    assert await control.ask_rebuild(first) == first
    assert await control.ask_rebuild(RebuildRequest.new(RebuildCause.REQUESTED, "b")) == first
    await control.put_rebuild(first.to(RebuildState.DONE))
    second = RebuildRequest.new(RebuildCause.REQUESTED)
    assert await control.ask_rebuild(second) == second


RACE = "race-board"


async def _project(projection: RedisProjection, prefix: str, region: str) -> None:
    """Epoch ``e1``: u, v and w on the race board, and positions that claim them."""
    await projection.start_epoch("e1")
    await projection.apply(RACE, [ProjectedTotal(u, 1, 5, -5.0, u) for u in ("u", "v", "w")])
    assert await projection.advance("e1", {(region, 0): SourcePosition(10, accepted_at_ms=1)})


class _LostAfterPositions:
    """The client's rounds, where Redis loses the projection right after each read of the positions,
    so between a reader's positions read and its board read (``together`` has the positions read in
    a round of their own, as on a cluster); then the projector's batch in flight, if any, writes its
    totals into the emptied Redis, as it does before it finds the epoch gone."""

    def __init__(self, projection: RedisProjection, prefix: str, in_flight: list[ProjectedTotal]) -> None:
        self._rounds, self._projection = rounds_of(projection.redis), projection
        self._in_flight, self._forget = in_flight, prefix

    def together(self, first: str, keys: Sequence[str]) -> bool:
        return False

    async def run(self, commands: Sequence[Command], *, in_order: bool = False) -> list[Any]:
        replies = await self._rounds.run(commands, in_order=in_order)
        if any(command.args[0] == "HGETALL" for command in commands):
            await _forget_everything(self._projection.redis, self._forget)
            if self._in_flight:
                await self._projection.apply(RACE, self._in_flight)
        return replies


def _lost_after_positions(
    redis: Redis, prefix: str, region: str, in_flight: list[ProjectedTotal]
) -> tuple[RedisProjection, RankReader]:
    projection = RedisProjection(redis, prefix)
    return projection, RankReader(projection, prefix, region, rounds=_LostAfterPositions(projection, prefix, in_flight))


async def test_an_answer_read_across_a_loss_says_stale(settings: Settings, redis_client: Redis) -> None:
    prefix, region = settings.redis.key_prefix, settings.region
    projection, reader = _lost_after_positions(redis_client, prefix, region, [])
    board = Board(RACE, "Race", region)

    await _project(projection, prefix, region)
    page = await reader.top(board, 10)
    assert (page.entries, page.as_of.stale) == ([], True)
    await _project(projection, prefix, region)
    entry, as_of = await reader.player(board, "u")
    assert (entry, as_of.stale) == (None, True)


async def test_an_answer_read_across_a_loss_says_stale_though_the_projector_wrote_into_the_lost_redis(
    settings: Settings, redis_client: Redis
) -> None:
    """The batch in flight when Redis lost the projection puts w back before the projector finds the
    epoch gone: answers show w alone, where the positions read before the loss claim u and v too."""
    prefix, region = settings.redis.key_prefix, settings.region
    in_flight = [ProjectedTotal("w", 2, 9, -9.0, "w")]
    projection, reader = _lost_after_positions(redis_client, prefix, region, in_flight)
    board = Board(RACE, "Race", region)

    await _project(projection, prefix, region)
    page = await reader.top(board, 10)
    assert [e.user_id for e in page.entries] == ["w"] and page.as_of.positions
    assert page.as_of.stale
    await _project(projection, prefix, region)
    entry, as_of = await reader.player(board, "w")
    assert entry is not None and entry.rank == 1 and as_of.stale
    await _project(projection, prefix, region)
    context = await reader.context(board, "w", 2)
    assert context is not None and context.above == context.below == [] and context.as_of.stale
    await _project(projection, prefix, region)
    as_of, top, windows = await reader.windows(board, ["w", "u"], 10)
    assert top is not None and top.count == 1 and windows[1] is None and as_of.stale


async def test_the_same_reads_while_the_epoch_holds_are_not_stale(
    settings: Settings, redis_client: Redis
) -> None:
    """The control of the two tests above: with no loss between the reads, answers claim their positions."""
    prefix, region = settings.redis.key_prefix, settings.region
    projection, board = RedisProjection(redis_client, prefix), Board(RACE, "Race", region)
    reader = RankReader(projection, prefix, region)
    await _project(projection, prefix, region)

    page = await reader.top(board, 10)
    assert [e.user_id for e in page.entries] == ["u", "v", "w"] and not page.as_of.stale
    entry, as_of = await reader.player(board, "v")
    assert entry is not None and entry.rank == 2 and not as_of.stale
    as_of, top, windows = await reader.windows(board, ["w", "x"], 10)
    assert top is not None and top.count == 3 and windows[1] is None and not as_of.stale


LATE_READS = ["top", "page", "player", "context", "windows", "players", "entries_as_of"]


async def _late_read(reader: RankReader, board: Board, how: str) -> tuple[list[str], AsOf]:
    """The players one read of ``board`` shows, and its asOf."""
    if how == "top":
        page = await reader.top(board, 10)
        return [e.user_id for e in page.entries], page.as_of
    if how == "page":
        rows, as_of = await reader.page(board, PageRequest(10, forward=True))
        return [row[0] for row in rows.rows], as_of
    if how == "player":
        entry, as_of = await reader.player(board, "p1")
        return [] if entry is None else [entry.user_id], as_of
    if how == "context":  # (a player not found comes without an asOf: it claims nothing)
        context = await reader.context(board, "p1", 2)
        assert context is not None, "the context of p1 was not found"
        return [context.player.user_id], context.as_of
    if how == "windows":
        as_of, top, _ = await reader.windows(board, ["p1"], 10)
        return [row[0] for row in top.rows], as_of
    if how == "players":
        found, as_of = await reader.players(board, ["p1"])
        return list(found), as_of
    entries, as_of = await reader.entries_as_of([(board, "p1")])
    return [e.user_id for e in entries if e is not None], as_of


@pytest.mark.parametrize("how", LATE_READS)
async def test_a_board_laid_out_after_a_read_found_no_layout_is_in_the_answer_its_asof_covers(
    settings: Settings, redis_client: Redis, how: str
) -> None:
    """A read looks for the board's layout and finds none; before it reads the positions, the
    projector lays the board out, applies its first total and moves the positions past it. The
    answer claims those positions, so it must show that total (I5)."""
    prefix, region = settings.redis.key_prefix, settings.region
    writer, board = RedisProjection(redis_client, prefix), Board("late", "Late", region, shards=2)
    await writer.start_epoch("e1")
    projection = RedisProjection(redis_client, prefix)
    look, steps = projection.layouts.live, [writer]

    async def look_then_the_projector_steps(board_ids: Iterable[str]) -> dict[str, Layout | None]:
        found = await look(board_ids)
        while steps:
            await steps.pop().apply(board.id, [ProjectedTotal("p1", 1, 13, -13.0, "p1")], 2)
            assert await writer.advance("e1", {(region, 2): SourcePosition(1)})
        return found

    projection.layouts.live = look_then_the_projector_steps  # type: ignore[method-assign]
    shown, as_of = await _late_read(RankReader(projection, prefix, region), board, how)

    assert not steps  # the projector stepped in between
    assert not as_of.stale and as_of.positions == {(region, 2): 1}
    assert shown == ["p1"]


async def test_a_projection_in_its_first_life_starts_fresh_instead_of_rebuilding(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection, control = RedisProjection(redis_client, prefix), ProjectionControl(redis_client, prefix)

    positions, request = await rebuild_to_run(projection, control, first_life=True)

    assert request is None and await control.rebuild() is None
    stored = await projection.positions()
    assert stored == positions and stored.epoch and not stored.rebuilding and stored.offsets == {}


async def test_boards_and_the_shards_of_a_board_spread_over_every_master(
    settings: Settings, redis_client: Redis
) -> None:
    """Each shard's keys share one slot; different boards, and the shards of one board, land on
    different masters of a cluster (on one server, the one server holds them all)."""
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    users = [f"u{i}" for i in range(64)]
    work = [BoardTotals(f"spread-{i}", 1, [ProjectedTotal("u", 1, 1, -1.0, "u")]) for i in range(40)]
    work.append(BoardTotals("sharded", 12, [ProjectedTotal(u, 1, 1, -1.0, u) for u in users]))
    await projection.apply_live(work)
    layouts = await projection.layouts.live(w.board_id for w in work)
    shards = [(layout, s) for layout in layouts.values() if layout is not None for s in range(layout.shards)]

    if isinstance(redis_client, RedisCluster):
        node = lambda key: redis_client.get_node_from_key(key).name  # noqa: E731
        masters = {n.name for n in redis_client.get_primaries()}
        homes = {node(layout.shard(prefix, s).ranking) for layout, s in shards if layout.shards == 1}
        spread = {node(layout.shard(prefix, s).ranking) for layout, s in shards if layout.shards == 12}
        per_shard = {
            len({node(k.ranking), node(k.state), node(k.bucket("u")), node(k.bucket("x"))})
            for k in (layout.shard(prefix, s) for layout, s in shards)
        }
        assert len(masters) > 1 and homes == masters and spread == masters and per_shard == {1}
    assert [await projection.count(w.board_id) for w in work] == [len(w.totals) for w in work]
    assert await projection.total_of("sharded", "u63") == 1


@pytest.mark.parametrize(
    ("tie", "shards"), [(TiePolicy.USER_ID, 1), (TiePolicy.FIRST_REACHED, 1), (TiePolicy.USER_ID, 3)]
)
async def test_a_removal_takes_the_player_off_the_board_only_when_newer(
    settings: Settings, redis_client: Redis, tie: TiePolicy, shards: int
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    board = Board("rolling-removal", "r", "local", tie_policy=tie, shards=shards)
    reader = RankReader(projection, prefix, "local")

    def total(user: str, version: int, points: int) -> ProjectedTotal:
        score, member = encode(board.sort_order, tie, user, points, reached_position(version, 0, 0))
        return ProjectedTotal(user, version, points, score, member)

    await projection.apply(board.id, [total("ann", 3, 7), total("bob", 1, 5)], shards)

    stale = await projection.apply(board.id, [ProjectedTotal("ann", 2, 0, 0.0, "")])  # an older removal
    removed = await projection.apply(board.id, [ProjectedTotal("ann", 4, 0, 0.0, "")])
    assert (stale.users, removed.users) == ([], ["ann"])
    assert [e.user_id for e in (await reader.top(board, 10)).entries] == ["bob"]
    assert (await reader.player(board, "ann"))[0] is None
    assert await reader.context(board, "ann", 2) is None
    assert await projection.count(board.id) == 1 and await projection.version_of(board.id, "ann") == 4
    assert await projection.total_of(board.id, "ann") is None

    older = await projection.apply(board.id, [total("ann", 4, 9)])  # not newer
    back = await projection.apply(board.id, [total("ann", 5, 9)])
    assert (older.users, back.users) == ([], ["ann"])
    assert [e.user_id for e in (await reader.top(board, 10)).entries] == ["ann", "bob"]
    assert await projection.total_of(board.id, "ann") == 9


async def test_applies_and_reads_go_on_after_the_server_forgot_its_scripts(
    settings: Settings, redis_client: Redis
) -> None:
    """A restarted or failed-over Redis has an empty script cache: a pipeline of script calls loads
    them and runs once more (the calls are versioned applies and reads: running twice is harmless)."""
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    board = Board("forgotten-scripts", "f", "local", shards=2)
    reader = RankReader(projection, prefix, "local")
    await projection.apply(board.id, [ProjectedTotal(f"p{i}", 1, i, -i, f"p{i}") for i in range(6)], 2)

    await redis_client.script_flush()
    applied = await projection.apply(board.id, [ProjectedTotal("p1", 2, 10, -10.0, "p1")], 2)
    await redis_client.script_flush()
    top = await reader.top(board, 3)  # one call per shard, in one pipeline

    assert applied.users == ["p1"]
    assert [(e.user_id, e.score) for e in top.entries] == [("p1", 10), ("p5", 5), ("p4", 4)]
    assert await projection.version_of(board.id, "p1") == 2
