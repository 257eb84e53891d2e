"""Where a framed read puts its positions and its epoch (``regions.stores.redis.framing``), against a
reference implementation of the rounds port that records what it is sent: first and last in the
rounds of one server; on a cluster, the positions ahead of the first round's commands on their
master only (the others after their reply), and the epoch in a round of its own after a round that
read another master."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from regions.stores.redis.framing import Frame
from regions.stores.redis.links import Command
from regions.stores.redis.rounds import Rerouted

KEY = "lb:{lb:positions}"
POSITIONS = {"epoch": "e1", "eu:0": "41"}


class RecordedRounds:
    """Rounds that answer every command at once and remember each round: ``near`` keys share the
    positions' server; ``reroute``: the first round sent in order is refused."""

    def __init__(self, near: set[str] | None = None, *, reroute: bool = False) -> None:
        self.near, self.reroute = near, reroute
        self.sent: list[tuple[list[str], bool]] = []

    def together(self, first: str, keys: Sequence[str]) -> bool:
        return all(self.near is None or key in self.near or key == first for key in keys)

    async def run(self, commands: Sequence[Command], *, in_order: bool = False) -> list[Any]:
        self.sent.append(([_name(c) for c in commands], in_order))
        await asyncio.sleep(0)  # (as a server's answer would: other rounds may start meanwhile)
        if in_order and self.reroute:
            self.reroute = False
            raise Rerouted("a slot is moving")
        return [_reply(c) for c in commands]


def _name(command: Command) -> str:
    return {"HGETALL": "positions", "HGET": "epoch"}.get(str(command.args[0]), command.key)


def _reply(command: Command) -> Any:
    return {"HGETALL": POSITIONS, "HGET": "e1"}.get(str(command.args[0]), f"reply {command.key}")


def _read(*keys: str) -> list[Command]:
    return [Command(key, ("EVALSHA", "sha", 1, key)) for key in keys]


async def test_on_one_server_the_positions_come_first_and_the_epoch_last_in_the_rounds_themselves() -> None:
    rounds = RecordedRounds()
    frame = Frame(rounds, KEY)
    assert await frame.round(_read("s0", "s1")) == ["reply s0", "reply s1"]
    assert await frame.round(_read("s2")) == ["reply s2"]
    positions, epoch = await frame.close()
    assert rounds.sent == [(["positions", "s0", "s1", "epoch"], True), (["s2", "epoch"], True)]
    assert (positions.epoch, positions.offsets, epoch) == ("e1", {("eu", 0): 41}, "e1")


async def test_on_a_cluster_other_masters_wait_for_the_positions_and_the_epoch_comes_after_them() -> None:
    rounds = RecordedRounds(near={"p0", "p1"})
    frame = Frame(rounds, KEY)
    assert await frame.round(_read("b0", "p0")) == ["reply b0", "reply p0"]
    assert await frame.round(_read("p1")) == ["reply p1"]
    await frame.round(_read("b1", "p1"))
    await frame.close()
    assert rounds.sent == [
        (["positions", "p0"], True),  # the positions, then what their master holds, in order
        (["b0"], False),  # the other masters once the positions are read
        (["p1", "epoch"], True),  # all on the epoch's master: the epoch after them
        (["b1", "p1"], False),
        (["epoch"], True),  # after a round on another master: a round of its own
    ]


async def test_a_first_round_on_other_masters_only_reads_the_positions_and_epoch_first() -> None:
    rounds = RecordedRounds(near=set())
    frame = Frame(rounds, KEY)
    await frame.round(_read("b0"))
    await frame.close()
    assert rounds.sent == [(["positions"], True), (["b0"], False), (["epoch"], True)]


async def test_a_slot_moving_under_the_first_round_reads_the_positions_alone_first() -> None:
    rounds = RecordedRounds(near={"p0"}, reroute=True)
    frame = Frame(rounds, KEY)
    assert await frame.round(_read("p0")) == ["reply p0"]
    await frame.close()
    assert rounds.sent == [
        (["positions", "p0", "epoch"], True),
        (["positions"], False),
        (["p0"], False),
        (["epoch"], True),
    ]


async def test_a_read_of_no_key_reads_the_positions_and_the_epoch_together() -> None:
    rounds = RecordedRounds()
    positions, epoch = await Frame(rounds, KEY).close()
    assert rounds.sent == [(["positions", "epoch"], True)] and (positions.epoch, epoch) == ("e1", "e1")


async def test_positions_begun_alone_come_before_the_keys_read_next_and_the_epoch_after_them() -> None:
    rounds = RecordedRounds()
    frame = Frame(rounds, KEY)
    assert await frame.begin()
    assert not await frame.begin()  # once: the positions a read claims are the first it read
    assert await frame.round(_read("s0")) == ["reply s0"]
    positions, epoch = await frame.close()
    assert rounds.sent == [(["positions"], False), (["s0", "epoch"], True)]
    assert (positions.epoch, epoch) == ("e1", "e1")


async def test_positions_begun_with_no_key_read_after_them_still_have_the_epoch_read_at_the_close() -> None:
    rounds = RecordedRounds()
    frame = Frame(rounds, KEY)
    await frame.begin()
    await frame.close()
    assert rounds.sent == [(["positions"], False), (["epoch"], True)]


async def test_rounds_of_one_read_at_once_have_the_epoch_read_after_them_all() -> None:
    rounds = RecordedRounds()
    frame = Frame(rounds, KEY)
    await frame.round(_read("s0"))
    await asyncio.gather(frame.round(_read("s1")), frame.round(_read("s2")))
    await frame.close()
    assert rounds.sent[-1] == (["epoch"], True) and len(rounds.sent) == 4


async def test_a_last_round_on_both_goes_to_the_other_masters_first_then_to_the_epochs_with_it() -> None:
    rounds = RecordedRounds(near={"p0", "p1"})
    frame = Frame(rounds, KEY)
    await frame.round(_read("p0"))
    assert await frame.round(_read("p1", "b1", "b2"), last=True) == ["reply p1", "reply b1", "reply b2"]
    await frame.close()
    assert rounds.sent == [
        (["positions", "p0", "epoch"], True),
        (["b1", "b2"], False),
        (["p1", "epoch"], True),  # after every other key: nothing left to read after the read
    ]
