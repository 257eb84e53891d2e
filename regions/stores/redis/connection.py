"""Connecting to the projection's Redis: one server or a Redis Cluster, chosen by the URL's scheme.

``redis://host:port/db`` (``rediss://`` with TLS) is one server; ``redis+cluster://host:port``
(``rediss+cluster://``) is a Redis Cluster reached through any of its nodes, which tells the client
the others. Every key of one projection scope shares a hash tag (``schema.redis_keys``), so each
script, MULTI and RENAME touches one slot and runs on one master. Reads go to masters only: a
replica may lag behind the positions its master already shows, and asOf would claim too much.

Several script calls run as one pipeline of EVALSHA (one round trip per node), and when a server
answers NOSCRIPT the scripts are loaded (on every master) and the pipeline runs once more (see
``call_scripts``).

Commands to one server are packed in C (hiredis), as redis-py's synchronous client packs them; its
asyncio client packs them in Python, which is most of the client's time when a projector applies
thousands of totals per call. (A cluster client packs them in Python: it takes no connection class.
Reads do not go through it: ``regions.stores.redis.rounds`` routes them over links of their own.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeAlias, cast
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.client import Pipeline, PubSub
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection, SSLConnection
from redis.commands.core import AsyncScript
from redis.connection import HiredisRespSerializer
from redis.exceptions import NoScriptError

from regions.core.redaction import mask_url

ProjectionRedis: TypeAlias = Redis | RedisCluster
ScriptCall: TypeAlias = tuple[AsyncScript, Sequence[str], Sequence[str | int | float]]

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


class InvalidRedisUrlError(ValueError):
    """A Redis URL this platform cannot use; the message names it and the schemes it takes."""


class _PackedInC:
    """Packs a connection's commands with hiredis: the same bytes as redis-py's Python packer."""

    _packer = HiredisRespSerializer()

    def pack_command(self, *args: Any) -> list[bytes]:
        return cast(list[bytes], self._packer.pack(*args))


class PackedConnection(_PackedInC, Connection):
    pass


class PackedSSLConnection(_PackedInC, SSLConnection):
    pass


_PACKED: dict[type[AbstractConnection], type[AbstractConnection]] = {
    Connection: PackedConnection,
    SSLConnection: PackedSSLConnection,
}


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def _node_url(url: str) -> str:
    """The ``redis://`` (or ``rediss://``) URL of the node a cluster URL names."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme=CLUSTER_SCHEMES[parts.scheme]))


def _check(url: str) -> None:
    scheme = urlsplit(url).scheme
    if scheme not in ("redis", "rediss", *CLUSTER_SCHEMES):
        raise InvalidRedisUrlError(
            f"Redis URL scheme {scheme!r} in {mask_url(url)!r}: expected redis://, rediss://, redis+cluster:// or "
            "rediss+cluster://"
        )


def connect_redis(url: str, *, max_connections: int | None = None, blocking: bool = False) -> ProjectionRedis:
    """A client for the projection at ``url``; replies are decoded to str. ``max_connections`` bounds
    the connections (per node on a cluster); with ``blocking`` a single server's pool makes callers
    wait for a free connection instead of failing under a burst (a cluster client has no waiting pool)."""
    _check(url)
    limit: dict[str, Any] = {} if max_connections is None else {"max_connections": max_connections}
    if is_cluster_url(url):
        return RedisCluster.from_url(
            _node_url(url), decode_responses=True, **limit
        )  # masters only: the default
    if blocking:
        return Redis.from_pool(  # closing the client closes its pool
            server_pool(url, blocking=True, max_connections=max_connections or 64, timeout=5)
        )
    return Redis.from_pool(server_pool(url, **limit))


def server_pool(url: str, *, blocking: bool = False, **options: Any) -> ConnectionPool:
    """A pool of connections to one server (``redis://`` or ``rediss://``) that decode replies to str
    and pack commands in C; ``blocking``: callers wait for a free connection (``options``: the pool's
    and the connections' settings, as redis-py names them)."""
    kind = BlockingConnectionPool if blocking else ConnectionPool
    pool = kind.from_url(url, decode_responses=True, **options)
    pool.connection_class = _PACKED.get(pool.connection_class, pool.connection_class)
    return pool


async def execute_pipeline(pipe: Pipeline | ClusterPipeline) -> list[Any]:
    """Run a pipeline so that neither a cancelled caller nor an error strands its connection.

    A pipeline takes a connection already while it loads its scripts and gives it back only at the
    end of a successful ``execute``; a caller cancelled in between (a closed subscription, a stopping
    service) or an error while loading scripts would leave it checked out. The work runs shielded on
    its own task and always resets the pipeline.
    """

    async def run() -> list[Any]:
        try:
            return await pipe.execute()
        finally:
            await pipe.reset()  # type: ignore[no-untyped-call]

    return await asyncio.shield(run())


async def call_scripts(redis: ProjectionRedis, calls: Sequence[ScriptCall]) -> list[Any]:
    """Run script calls in one round trip (per node on a cluster), replies in call order: one
    pipeline of EVALSHA, and when a server answers NOSCRIPT the scripts are loaded (on every master)
    and the pipeline runs once more, so the calls must be ones that may run twice (versioned
    applies, reads). A pipeline that checked its scripts first would wait a round trip before it
    sends anything."""
    if not calls:
        return []
    for attempt in range(2):
        pipe = redis.pipeline() if isinstance(redis, RedisCluster) else redis.pipeline(transaction=False)
        for script, keys, args in calls:  # (a cluster pipeline refuses evalsha())
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        try:
            return await execute_pipeline(pipe)
        except NoScriptError:
            if attempt:
                raise
            for source in {script.script for script, _, _ in calls}:
                await redis.script_load(source)  # on every master of a cluster
    raise AssertionError("unreachable")


async def open_pubsub(redis: ProjectionRedis) -> PubSub:
    """A pub/sub connection. On a cluster it is one node's (every node hears every publish), chosen
    once the client knows the cluster's nodes: a fresh cluster client learns them on first use."""
    if isinstance(redis, RedisCluster):
        await redis.initialize()
        return redis.pubsub(node=redis.get_default_node())
    return redis.pubsub()


async def publish_many(redis: ProjectionRedis, messages: Sequence[tuple[str, bytes]]) -> None:
    """Publish (channel, payload) messages in one round trip. A cluster forwards every message to all
    its nodes, so a subscriber on any node hears it; a cluster pipeline cannot route a publish (it
    names no key), so there they go as concurrent calls."""
    if not messages:
        return
    if isinstance(redis, RedisCluster):
        await asyncio.gather(*(redis.publish(channel, payload) for channel, payload in messages))
        return
    pipe = redis.pipeline(transaction=False)
    for channel, payload in messages:
        pipe.publish(channel, payload)
    await execute_pipeline(pipe)
