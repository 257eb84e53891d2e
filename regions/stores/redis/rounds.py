"""Rounds of commands to the projection's Redis over links (``regions.stores.redis.links``): a round's
commands go out at once, one write per server, and its replies come back in command order.

On one server (``ServerRounds``) a round is one write on one link, and Redis runs its commands in
the order given. On a cluster (``ClusterRounds``) the commands are routed by slot, with the cluster
client's slot map, to the master that holds it, one write per master; a master runs its share in
the order given, and masters run theirs in no order among themselves (``together`` says whether
keys are on one master). A MOVED answer patches the slot map and sends the command to the master
named; ASK sends it there once, after ASKING; TRYAGAIN (a slot being moved holds the keys in part)
sends it again shortly. A round sent ``in_order`` is refused instead (``Rerouted``), as a command
sent elsewhere would run after those that came after it. A failed link to a node fails the round
and has the slot map read afresh before the next one (a master may have failed over).

A round whose EVALSHA a server answers NOSCRIPT loads the scripts there and runs again, whole (to
keep its order), so the commands of a round must be ones that may run twice: reads. The first other
error reply raises.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, NodesManager, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection
from redis.crc import key_slot
from redis.exceptions import AskError, ClusterError, MovedError, NoScriptError, RedisError, TryAgainError

from regions.stores.redis.connection import ProjectionRedis
from regions.stores.redis.links import Command, Link, settle

REDIRECTS = 5  # MOVED, ASK or TRYAGAIN answers to one command before the round fails
TRY_AGAIN_S = 0.05  # the wait before a command that a slot's move held up is sent again
ASKING = Command("", ("ASKING",))


class Rerouted(RedisError):
    """A command of a round sent in order was redirected: send the round again, otherwise."""


class Rounds(Protocol):
    def together(self, first: str, keys: Sequence[str]) -> bool:
        """Whether commands on ``keys`` sent in one round after a command on ``first`` run after it
        (their keys are on its server)."""

    async def run(self, commands: Sequence[Command], *, in_order: bool = False) -> list[Any]:
        """The replies to ``commands``, in their order; ``in_order``: Rerouted rather than a command
        run elsewhere than on the master the round was sent to."""


class ServerRounds:
    """Rounds on one server, over one link borrowed from the client's pool."""

    def __init__(self, redis: Redis) -> None:
        self._pool = redis.connection_pool
        self._link: Link | None = None
        self._opening = asyncio.Lock()

    def together(self, first: str, keys: Sequence[str]) -> bool:
        return True

    async def run(self, commands: Sequence[Command], *, in_order: bool = False) -> list[Any]:
        if not commands:
            return []
        link = await self._open()
        replies = await link.exchange(commands)
        if any(isinstance(reply, NoScriptError) for reply in replies):
            await link.exchange(_loads(commands, replies))
            replies = await link.exchange(commands)
        return _checked(replies)

    async def _open(self) -> Link:
        if self._link is not None and self._link.alive:
            return self._link
        async with self._opening:
            if self._link is None or not self._link.alive:
                self._link = await Link.open(await self._pool.get_connection(), self._pool.release)  # type: ignore[no-untyped-call]
            return self._link


class ClusterRounds:
    """Rounds on a cluster's masters, over a link to each (borrowed from the cluster client's node)."""

    def __init__(self, cluster: RedisCluster) -> None:
        self._cluster = weakref.ref(cluster)  # (the client keeps its rounds: no cycle through it)
        self._links: dict[str, Link] = {}
        self._opening = asyncio.Lock()
        self._stale = False  # a link failed: read the slot map afresh first

    def together(self, first: str, keys: Sequence[str]) -> bool:
        cluster = self._cluster()
        if cluster is None or not cluster.nodes_manager.slots_cache:
            return False  # (not known yet)
        node = cluster.nodes_manager.get_node_from_slot
        at = node(key_slot(first.encode())).name
        return all(node(key_slot(key.encode())).name == at for key in keys)

    async def run(self, commands: Sequence[Command], *, in_order: bool = False) -> list[Any]:
        if not commands:
            return []
        replies = await self._routed(commands, in_order)
        if any(isinstance(reply, NoScriptError) for reply in replies):  # again whole: to keep its order
            await self._routed(_loads(commands, replies))
            replies = await self._routed(commands, in_order)
        return _checked(replies)

    async def _manager(self) -> NodesManager:
        cluster = self._cluster()
        if cluster is None:
            raise RedisError("the cluster client of these rounds is gone")
        await cluster.initialize()  # (once)
        if self._stale:
            self._stale = False
            await cluster.nodes_manager.initialize()
        return cluster.nodes_manager

    async def _routed(self, commands: Sequence[Command], in_order: bool = False) -> list[Any]:
        """Each command's reply from the master that holds its key, after the redirections."""
        manager = await self._manager()
        replies: list[Any] = [None] * len(commands)
        asked: dict[int, ClusterNode] = {}  # command -> the node an ASK named
        todo = list(range(len(commands)))
        for _ in range(REDIRECTS):
            by_node: dict[str, tuple[ClusterNode, list[int]]] = {}
            for i in todo:
                node = asked.get(i) or manager.get_node_from_slot(key_slot(commands[i].key.encode()))
                by_node.setdefault(node.name, (node, []))[1].append(i)
            answered = await self._exchange(commands, set(asked), list(by_node.values()))
            todo, asked, pause = [], {}, False
            for i, reply in answered:
                if isinstance(reply, MovedError):
                    await manager.move_slot(reply)
                elif isinstance(reply, AskError):
                    asked[i] = await self._asked(manager, reply)
                elif isinstance(reply, TryAgainError):
                    pause = True
                else:
                    replies[i] = reply
                    continue
                todo.append(i)
            if not todo:
                return replies
            if in_order:
                raise Rerouted("a command of the round was redirected: the cluster's slots are moving")
            if pause:
                await asyncio.sleep(TRY_AGAIN_S)
        raise ClusterError(f"a command was redirected {REDIRECTS} times: the cluster's slots keep moving")

    async def _exchange(
        self, commands: Sequence[Command], asking: set[int], groups: list[tuple[ClusterNode, list[int]]]
    ) -> list[tuple[int, Any]]:
        """(command, reply) of every group, each sent to its node in one write, all before any wait."""
        sent: list[tuple[list[int], list[int], Link, list[asyncio.Future[Any]]]] = []
        try:
            for node, indices in groups:
                group = [
                    c for i in indices for c in ((ASKING, commands[i]) if i in asking else (commands[i],))
                ]
                kept = [j for j, command in enumerate(group) if command is not ASKING]
                link = await self._link(node)
                sent.append((indices, kept, link, await link.send(group)))
            answered: list[tuple[int, Any]] = []
            for indices, kept, link, futures in sent:
                replies = await link.answers(futures)
                answered += zip(indices, (replies[j] for j in kept), strict=True)
            return answered
        except BaseException as exc:
            for _, _, _, futures in sent:
                settle(futures)
            self._stale = self._stale or isinstance(exc, RedisError | OSError)
            raise

    async def _link(self, node: ClusterNode) -> Link:
        link = self._links.get(node.name)
        if link is not None and link.alive:
            return link
        async with self._opening:
            link = self._links.get(node.name)
            if link is None or not link.alive:
                link = self._links[node.name] = await Link.open(node.acquire_connection(), _releaser(node))
            return link

    @staticmethod
    async def _asked(manager: NodesManager, error: AskError) -> ClusterNode:
        """The node an ASK names (read afresh when the slot map does not know it yet)."""
        node = manager.get_node(host=error.host, port=error.port)
        if node is None:
            await manager.initialize()
            node = manager.get_node(host=error.host, port=error.port)
        if node is None:
            raise ClusterError(f"ASK named {error.host}:{error.port}, which the cluster does not list")
        return node


def _releaser(node: ClusterNode) -> Callable[[AbstractConnection], Awaitable[None]]:
    async def give_back(connection: AbstractConnection) -> None:
        if isinstance(connection, Connection):
            node.release(connection)

    return give_back


def _loads(commands: Sequence[Command], replies: Sequence[Any]) -> list[Command]:
    """SCRIPT LOAD of the script of each command answered NOSCRIPT, routed as that command."""
    missing = {
        (c.script, c.key) for c, r in zip(commands, replies, strict=True) if isinstance(r, NoScriptError)
    }
    return [Command(key, ("SCRIPT", "LOAD", script)) for script, key in missing if script is not None]


def _checked(replies: list[Any]) -> list[Any]:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return replies


_ROUNDS: weakref.WeakKeyDictionary[ProjectionRedis, Rounds] = weakref.WeakKeyDictionary()


def rounds_of(redis: ProjectionRedis) -> Rounds:
    """The rounds of ``redis``, made once per client: its links serve every reader of it."""
    rounds = _ROUNDS.get(redis)
    if rounds is None:
        made = ClusterRounds(redis) if isinstance(redis, RedisCluster) else ServerRounds(redis)
        rounds = _ROUNDS[redis] = made
    return rounds
