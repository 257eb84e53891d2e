"""Connecting to the projection's Redis: one server or a Redis Cluster, chosen by the URL's scheme.

``redis://host:port/db`` (``rediss://`` with TLS) is one server; ``redis+cluster://host:port``
(``rediss+cluster://``) is a Redis Cluster reached through any of its nodes, which tells the client
the others. Every key of one projection scope shares a hash tag (``schema.redis_keys``), so each
script, MULTI and RENAME touches one slot and runs on one master. Reads go to masters only: a
replica may lag behind the positions its master already shows, and asOf would claim too much.

A cluster pipeline cannot load a script a node is missing: there several script calls run as one
pipeline of EVALSHA (one round trip per node), and when a node answers NOSCRIPT the scripts are
loaded on every master and the pipeline runs once more. Reads that end with a look at the positions
run the same way on one server, so that they take a single round trip (a pipeline that loads its
scripts first asks the server whether it has them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeAlias, cast
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.client import Pipeline, PubSub
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

ProjectionRedis: TypeAlias = Redis | RedisCluster
ScriptCall: TypeAlias = tuple[AsyncScript, Sequence[str], Sequence[str | int | float]]

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


class InvalidRedisUrlError(ValueError):
    """A Redis URL this platform cannot use; the message names it and the schemes it takes."""


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
            f"Redis URL scheme {scheme!r} in {url!r}: expected redis://, rediss://, redis+cluster:// or "
            "rediss+cluster://"
        )


def connect_redis(url: str, *, max_connections: int | None = None, blocking: bool = False) -> ProjectionRedis:
    """A client for the projection at ``url``; replies are decoded to str. ``max_connections`` bounds
    the connections (per node on a cluster); with ``blocking`` a single server's pool makes callers
    wait for a free connection instead of failing under a burst (a cluster client has no waiting pool)."""
    _check(url)
    if is_cluster_url(url):
        limit = {} if max_connections is None else {"max_connections": max_connections}
        return RedisCluster.from_url(
            _node_url(url), decode_responses=True, **limit
        )  # masters only: the default
    if blocking:
        pool = BlockingConnectionPool.from_url(
            url, decode_responses=True, max_connections=max_connections or 64, timeout=5
        )
        return Redis.from_pool(pool)  # closing the client closes its pool
    if max_connections is None:
        return Redis.from_url(url, decode_responses=True)
    return Redis.from_url(url, decode_responses=True, max_connections=max_connections)


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
    """Run script calls in one round trip, replies in call order (see the module's note on clusters)."""
    if not calls:
        return []
    if isinstance(redis, RedisCluster):
        return await _evalsha_pipeline(redis, calls)
    pipe = redis.pipeline(transaction=False)
    for script, keys, args in calls:
        await script(keys=keys, args=args, client=pipe)
    return await execute_pipeline(pipe)


async def call_scripts_then_hget(
    redis: ProjectionRedis, calls: Sequence[ScriptCall], key: str, field: str
) -> tuple[list[Any], str | None]:
    """Run script calls, then ``HGET key field`` once they have run (to learn whether something
    changed while they ran): the calls' replies in call order, and the field's value. One server runs
    a connection's commands in order, so there it is one pipeline; a cluster runs each node's part of
    a pipeline concurrently, so there the HGET follows the calls."""
    if isinstance(redis, RedisCluster):
        replies = await call_scripts(redis, calls)
        return replies, cast(str | None, await redis.hget(key, field))
    *replies, value = await _evalsha_pipeline(redis, calls, then_hget=(key, field))
    return replies, cast(str | None, value)


async def _evalsha_pipeline(
    redis: ProjectionRedis, calls: Sequence[ScriptCall], then_hget: tuple[str, str] | None = None
) -> list[Any]:
    """Script calls as one pipeline of EVALSHA (evalsha() is refused in a cluster pipeline), with an
    ``HGET`` at its end if asked; a server missing a script answers NOSCRIPT, and then the scripts
    are loaded (on every master of a cluster) and the pipeline runs once more."""
    for attempt in range(2):
        pipe = redis.pipeline() if isinstance(redis, RedisCluster) else redis.pipeline(transaction=False)
        for script, keys, args in calls:
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        if then_hget is not None:
            pipe.hget(*then_hget)
        try:
            return await execute_pipeline(pipe)
        except NoScriptError:
            if attempt:
                raise
            for source in {script.script for script, _, _ in calls}:
                await redis.script_load(source)
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
