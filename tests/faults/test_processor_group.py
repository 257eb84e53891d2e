"""Two processor instances in one region: the group moves partitions between them.

The awards keep flowing through the intake while an instance is killed, or frozen for longer than
the group's session timeout and then thawed (it wakes believing it still owns its partitions).
Afterwards every total equals the fold over the distinct accepted awards, and every version equals
the number of awards applied to that player: nothing lost, nothing applied twice. Whether a woken
instance can still commit is timing-dependent here; ``test_processor_fencing`` checks the fencing
itself deterministically.
"""

from __future__ import annotations

import asyncio
import random
import signal

import httpx

from regions.core.boards import Board
from tests.faults.history import History
from tests.faults.test_region_faults import PLAYERS, _board, _converge, _load
from tests.harness import Region


async def _owned(region: Region, name: str) -> set[int]:
    """The awards partitions an instance reports lag for, i.e. the ones it owns."""
    async with httpx.AsyncClient() as http:
        body = (await http.get(region.health_url(name) + "/healthz")).json()
    return {int(p) for p in body.get("lag", {}).get(region.settings.kafka.topic("awards"), {})}


async def _wait_owned(region: Region, name: str, partitions: set[int]) -> None:
    async def owns() -> bool:
        return await _owned(region, name) == partitions

    await region.wait_until(owns, within=40, what=f"{name} owning partitions {sorted(partitions)}")


async def _assert_versions_count_distinct_awards(region: Region, history: History, board_id: str) -> None:
    for user in PLAYERS:
        applied = sum(1 for (_, u, _) in history.distinct("ok") if u == user)
        version = await region.projection.version_of(board_id, user)
        assert (version or 0) == applied, f"{user}: version {version} after {applied} distinct awards"


async def _two_instances_sharing_a_loaded_board(
    region: Region, seed: int
) -> tuple[set[int], Board, History, random.Random]:
    """A second processor instance, 200 awards on a new board, and every partition owned by one of the two."""
    everything = set(range(region.settings.kafka.partitions))
    await region.start_instance("processor-b", "processor")
    board, history, rng = await _board(region), History(), random.Random(seed)
    await _load(region, history, board, 200, rng)
    await _wait_shared(region, everything)
    return everything, board, history, rng


async def test_partitions_of_a_killed_instance_move_to_the_survivor(region: Region) -> None:
    everything, board, history, rng = await _two_instances_sharing_a_loaded_board(region, 23)

    await region.kill("processor-b")  # SIGKILL, likely inside one of its transactions
    await _load(region, history, board, 300, rng)
    await _wait_owned(region, "processor", everything)
    await _load(region, history, board, 100, rng)

    await _converge(region, history, board)
    assert history.every_award_acknowledged()
    await _assert_versions_count_distinct_awards(region, history, board.id)


async def test_a_frozen_instance_is_fenced_when_it_wakes(region: Region) -> None:
    everything, board, history, rng = await _two_instances_sharing_a_loaded_board(region, 29)

    loading = asyncio.create_task(_load(region, history, board, 300, rng))
    await asyncio.sleep(0.3)  # mid-stream: the instance holds fetched records and open transactions
    region.send_signal("processor-b", signal.SIGSTOP)  # as a long GC pause or a hung host would
    try:
        await loading
        await _wait_owned(region, "processor", everything)  # the group gave up on the frozen one
        await _load(region, history, board, 200, rng)
    finally:
        region.send_signal("processor-b", signal.SIGCONT)
    # The thawed instance may still hold records fetched before the pause; it cannot commit them
    # for partitions it lost, because the survivor fenced their transactional ids.
    await _load(region, history, board, 200, rng)
    await asyncio.sleep(1)
    await _load(region, history, board, 100, rng)

    await _converge(region, history, board)
    assert history.every_award_acknowledged()
    await _assert_versions_count_distinct_awards(region, history, board.id)
    await _wait_shared(region, everything)  # both instances are in the group again
    # Had the thawed instance written anything stale, the changelog would now hold it: one instance
    # restores every partition from it, and repeats as well as new awards must still add up.
    await region.stop("processor-b")
    await region.kill("processor")
    await region.start("processor")
    for op in [o for o in history.ops if o.outcome == "ok"][:60]:
        await history.submit(region.client, board.id, op.user, op.match, op.amount)
    await _load(region, history, board, 100, rng)
    await _converge(region, history, board)
    await _assert_versions_count_distinct_awards(region, history, board.id)


async def _wait_shared(region: Region, everything: set[int]) -> None:
    """Until the two instances own disjoint, non-empty sets of partitions that cover them all."""

    async def shared() -> bool:
        a, b = await _owned(region, "processor"), await _owned(region, "processor-b")
        return bool(a) and bool(b) and a | b == everything and not a & b

    await region.wait_until(shared, within=40, what="both instances sharing the partitions")
