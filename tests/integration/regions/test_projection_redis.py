"""The projection's Redis adapter and control keys against the real Redis (this test's key prefix)."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis, RedisCluster

from regions.core.boards import Board
from regions.core.positions import SourcePosition
from regions.projector.rebuild import begin_after_loss, rebuild_to_run
from regions.projector.redis_control import (
    Lease,
    LeaseLost,
    ProjectionControl,
    RebuildCause,
    RebuildRequest,
    RebuildState,
)
from regions.redis_projection import Positions, ProjectedTotal, RedisProjection
from regions.redis_reads import RankReader
from regions.settings import Settings
from schema.redis_keys import board_keys


async def _forget_everything(redis: Redis | RedisCluster, prefix: str) -> None:
    """What FLUSHALL does to this test's keys."""
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*")]
    if keys:
        await redis.delete(*keys)


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
    keys = board_keys(prefix, "seq-board")
    published = []
    for round_ in range(3):
        positions, _ = await begin_after_loss(projection, control)
        for version in range(1, 4):
            result = await projection.apply(keys, [ProjectedTotal("u", version + 10 * round_, 1, -1.0, "u")])
            published.append(positions.sequence_base + result.sequence)
        await _forget_everything(redis_client, prefix)

    assert published == sorted(published) and len(set(published)) == len(published)


async def test_fresh_keys_leave_the_live_sequence_alone_and_swap_in_whole(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    live, fresh = board_keys(prefix, "swap-board"), board_keys(prefix, "swap-board", "g1")
    await projection.apply(live, [ProjectedTotal("old", 1, 1, -1.0, "old")])

    [result] = await projection.apply_many(
        [(fresh, [ProjectedTotal("new", 2, 5, -5.0, "new")])], sequenced=False
    )
    assert (result.sequence, result.users) == (0, ["new"])
    assert await redis_client.get(live.sequence) == "1"
    await projection.swap(fresh, live)

    assert await redis_client.zrange(live.ranking, 0, -1) == ["new"]
    assert await projection.version_of(live, "new") == 2 and await projection.version_of(live, "old") is None
    assert await redis_client.exists(fresh.ranking, fresh.records) == 0
    assert await projection.next_sequences([live]) == [2]


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
    keys = board_keys(prefix, RACE)
    await projection.apply(keys, [ProjectedTotal(u, 1, 5, -5.0, u) for u in ("u", "v", "w")])
    assert await projection.advance("e1", {(region, 0): SourcePosition(10, accepted_at_ms=1)})


class _LostAfterPositions(RedisProjection):
    """Redis loses the projection right after each read of the positions, so between a reader's
    positions read and its board read; then the projector's batch in flight, if any, writes its
    totals into the emptied Redis, as it does before it finds the epoch gone."""

    def __init__(self, redis: Redis, prefix: str, in_flight: list[ProjectedTotal]) -> None:
        super().__init__(redis, prefix)
        self._race, self._in_flight = board_keys(prefix, RACE), in_flight
        self._forget = prefix

    async def positions(self) -> Positions:
        positions = await super().positions()
        await _forget_everything(self.redis, self._forget)
        if self._in_flight:
            await self.apply(self._race, self._in_flight)
        return positions


async def test_an_answer_read_across_a_loss_says_stale(settings: Settings, redis_client: Redis) -> None:
    prefix, region = settings.redis.key_prefix, settings.region
    projection, board = _LostAfterPositions(redis_client, prefix, []), Board(RACE, "Race", region)
    reader = RankReader(projection, prefix, region)

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
    projection, board = _LostAfterPositions(redis_client, prefix, in_flight), Board(RACE, "Race", region)
    reader = RankReader(projection, prefix, region)

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


async def test_a_projection_in_its_first_life_starts_fresh_instead_of_rebuilding(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection, control = RedisProjection(redis_client, prefix), ProjectionControl(redis_client, prefix)

    positions, request = await rebuild_to_run(projection, control, first_life=True)

    assert request is None and await control.rebuild() is None
    stored = await projection.positions()
    assert stored == positions and stored.epoch and not stored.rebuilding and stored.offsets == {}


async def test_boards_spread_over_every_master(settings: Settings, redis_client: Redis) -> None:
    """Each board's keys share one slot; different boards land on different masters of a cluster (on
    one server, the one server holds them all)."""
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    boards = [board_keys(prefix, f"spread-{i}") for i in range(40)]
    await projection.apply_many([(keys, [ProjectedTotal("u", 1, 1, -1.0, "u")]) for keys in boards])

    if isinstance(redis_client, RedisCluster):
        masters = {node.name for node in redis_client.get_primaries()}
        homes = {
            redis_client.get_node_from_key(k).name for keys in boards for k in (keys.ranking, keys.records)
        }
        per_board = {
            len({redis_client.get_node_from_key(k).name for k in (keys.ranking, keys.records, keys.sequence)})
            for keys in boards
        }
        assert len(masters) > 1 and homes == masters and per_board == {1}
    for keys in boards:
        assert await redis_client.zrange(keys.ranking, 0, -1) == ["u"]


async def test_a_removal_takes_the_player_off_the_board_only_when_newer(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    board = Board("rolling-removal", "r", "local")
    keys = board_keys(prefix, board.id)
    reader = RankReader(projection, prefix, "local")
    await projection.apply(
        keys, [ProjectedTotal("ann", 3, 7, -7.0, "ann"), ProjectedTotal("bob", 1, 5, -5.0, "bob")]
    )

    stale = await projection.apply(keys, [ProjectedTotal("ann", 2, 0, 0.0, "")])  # an older removal
    removed = await projection.apply(keys, [ProjectedTotal("ann", 4, 0, 0.0, "")])
    assert (stale.users, removed.users) == ([], ["ann"])
    assert [e.user_id for e in (await reader.top(board, 10)).entries] == ["bob"]
    assert (await reader.player(board, "ann"))[0] is None
    assert await projection.count(keys) == 1 and await projection.version_of(keys, "ann") == 4

    older = await projection.apply(keys, [ProjectedTotal("ann", 4, 9, -9.0, "ann")])  # not newer
    back = await projection.apply(keys, [ProjectedTotal("ann", 5, 9, -9.0, "ann")])
    assert (older.users, back.users) == ([], ["ann"])
    assert [e.user_id for e in (await reader.top(board, 10)).entries] == ["ann", "bob"]
