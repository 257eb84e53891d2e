"""A read framed by its asOf: the projection's positions read before the board's keys, and its epoch
read after them (why: ``regions.stores.redis.reads``).

Both travel in the read's own rounds where the order allows, as each would cost a round trip of its
own. A round's commands to one server (one master of a cluster) run in the order given
(``regions.stores.redis.rounds``): the positions go first in the read's first round, with the
commands on keys of their server after them, and the epoch last in a round whose keys are all on
its server, as it then comes after every key the read reads. On one server every key is: a read of
one shard is one round trip, positions and epoch included. On a cluster, masters run their shares of
a round in no order among themselves: the commands of the first round on other masters are sent
once the positions are read, and after a round that reads another master the epoch is a round of
its own. Rounds of one read may run at once (a read of several players' windows); the epoch is
then read in a round of its own once they are all answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from regions.stores.redis.links import Command
from regions.stores.redis.positions import Positions, positions_of
from regions.stores.redis.rounds import Rerouted, Rounds


def _hash(reply: Any) -> dict[str, str]:
    """An HGETALL reply as a dict (RESP2 answers a flat list of fields and values)."""
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))


class Frame:
    """One read's rounds between its positions and its epoch. ``positions``: read by the caller
    already, before any of the read's keys."""

    def __init__(self, rounds: Rounds, key: str, positions: Positions | None = None) -> None:
        self._rounds, self._key, self._positions = rounds, key, positions
        self._read_positions = Command(key, ("HGETALL", key))
        self._read_epoch = Command(key, ("HGET", key, "epoch"))
        self._epoch: str | None = None
        self._epoch_last = False  # the epoch was read after every key read so far
        self._running, self._overlapped = 0, False  # rounds in flight; whether two ever were at once

    async def begin(self) -> bool:
        """Read the positions now, in a round of their own, unless a round has already: for a read
        about to rely on a key it read before its first round (a board's layout, none yet), which
        must then be read again after them. Whether it read them; the epoch is read at ``close``."""
        if self._positions is not None:
            return False
        self._positions = positions_of(_hash((await self._rounds.run([self._read_positions]))[0]))
        self._epoch_last = False
        return True

    async def round(self, commands: Sequence[Command], *, last: bool = False) -> list[Any]:
        """The replies to ``commands``, read after the positions. The first round runs alone (the
        positions it reads come before every key of the read); ``last``: no round follows, so one
        that reads the epoch's master and others goes to the others first, then to that master
        with the epoch after (two writes where the epoch alone would be a third)."""
        if self._running and self._positions is None:
            raise RuntimeError("a frame's first round runs alone: it reads the positions")
        self._overlapped = self._overlapped or self._running > 0
        self._running += 1
        try:
            return await self._round(commands, last)
        finally:
            self._running -= 1

    async def _round(self, commands: Sequence[Command], last: bool) -> list[Any]:
        here = [self._rounds.together(self._key, [c.key]) for c in commands]
        near = [c for c, h in zip(commands, here, strict=True) if h]
        far = [c for c, h in zip(commands, here, strict=True) if not h]
        if self._positions is None:
            near_replies, far_replies = await self._first(near, far)
        elif last and near and far:  # the other masters, then the epoch's, the epoch after
            far_replies = await self._send(far, False)
            near_replies = await self._send(near, True)
        else:
            return await self._send(commands, not far)
        near_in, far_in = iter(near_replies), iter(far_replies)
        return [next(near_in) if h else next(far_in) for h in here]

    async def _first(self, near: list[Command], far: list[Command]) -> tuple[list[Any], list[Any]]:
        """The first round: the positions, then the commands on their server, in that order (the
        epoch after them when there is no other), then the other commands."""
        sent = [self._read_positions, *near, *([] if far else [self._read_epoch])]
        try:
            replies = await self._rounds.run(sent, in_order=True)
        except Rerouted:  # a slot is moving: no order to count on
            await self.begin()
            replies = await self._send([*near, *far], False)
            return replies[: len(near)], replies[len(near) :]
        self._positions = positions_of(_hash(replies[0]))
        if not far:
            self._epoch, self._epoch_last = replies[-1], True
            return replies[1:-1], []
        self._epoch_last = False
        return replies[1:], await self._rounds.run(far)

    async def close(self) -> tuple[Positions, str | None]:
        """The positions read before the read's first round, and the epoch read after its last."""
        if self._positions is None:
            await self.round([])
        elif not self._epoch_last or self._overlapped:
            await self._send([], True)
        positions: Positions | None = self._positions
        if positions is None:
            raise RuntimeError("a frame's first round reads its positions")
        return positions, self._epoch

    async def _send(self, commands: Sequence[Command], with_epoch: bool) -> list[Any]:
        """``commands`` in one round, with the epoch after them when they are all on its server."""
        if with_epoch:
            try:
                replies = await self._rounds.run([*commands, self._read_epoch], in_order=True)
            except Rerouted:
                pass  # a slot is moving: the commands again, and the epoch in a round of its own
            else:
                self._epoch, self._epoch_last = replies[-1], True
                return replies[:-1]
        self._epoch_last = False
        return await self._rounds.run(commands)


class Unframed:
    """Rounds of a read that claims no asOf (the same calls as a Frame's, nothing read around them)."""

    def __init__(self, rounds: Rounds) -> None:
        self._rounds = rounds

    async def begin(self) -> bool:
        return False  # no positions to read before anything

    async def round(self, commands: Sequence[Command], *, last: bool = False) -> list[Any]:
        return await self._rounds.run(commands)
