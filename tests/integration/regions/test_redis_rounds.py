"""Rounds of commands over links (``regions.stores.redis.rounds``), on the real Redis (one server or a
cluster): readers at once on one link each get their own replies; an error reply fails its round
alone; scripts a server forgot are loaded again; a connection lost fails the rounds waiting on it,
and the next round opens a new link; on a cluster, a slot moved to another master is followed
(MOVED), a slot being moved is asked (ASK), and a round sent in order is refused instead."""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from regions.runtime.settings import Settings
from regions.stores.redis.connection import connect_redis
from regions.stores.redis.links import Command
from regions.stores.redis.rounds import Rerouted, rounds_of

ECHO = "return ARGV[1]"
ECHO_SHA = hashlib.sha1(ECHO.encode()).hexdigest()


def _get(key: str) -> Command:
    return Command(key, ("GET", key))


@pytest.fixture
async def reader(settings: Settings, redis_ready: None) -> AsyncIterator[Redis | RedisCluster]:
    """A client of its own whose rounds the test drives (the fixture's client changes the data)."""
    client = connect_redis(settings.redis.url)
    try:
        yield client
    finally:
        await client.aclose()


async def test_readers_at_once_on_one_link_each_get_their_own_replies(
    settings: Settings, redis_client: Redis, reader: Redis
) -> None:
    prefix = settings.redis.key_prefix
    keys = [f"{prefix}:{{r{i}}}:k" for i in range(60)]
    for i, key in enumerate(keys):
        await redis_client.set(key, f"v{i}")
    rounds = rounds_of(reader)

    async def read(i: int) -> list[object]:
        return await rounds.run(
            [_get(keys[i]), _get(keys[(i + 7) % 60]), Command(keys[i], ("STRLEN", keys[i]))]
        )

    answers = await asyncio.gather(*(read(i) for i in range(60) for _ in range(5)))
    assert answers == [[f"v{i}", f"v{(i + 7) % 60}", len(f"v{i}")] for i in range(60) for _ in range(5)]


async def test_an_error_reply_fails_its_round_alone(
    settings: Settings, redis_client: Redis, reader: Redis
) -> None:
    prefix = settings.redis.key_prefix
    text, listed = f"{prefix}:{{e}}:text", f"{prefix}:{{e}}:list"
    await redis_client.set(text, "t")
    await redis_client.rpush(listed, "x")
    rounds = rounds_of(reader)

    wrong, right = await asyncio.gather(
        rounds.run([_get(text), Command(listed, ("GET", listed))]),
        rounds.run([_get(text)]),
        return_exceptions=True,
    )
    assert isinstance(wrong, ResponseError) and "WRONGTYPE" in str(wrong) and right == ["t"]
    assert await rounds.run([_get(text)]) == ["t"]


async def test_scripts_the_server_forgot_are_loaded_and_the_round_runs_again(
    settings: Settings, redis_client: Redis, reader: Redis
) -> None:
    key = f"{settings.redis.key_prefix}:{{s}}:k"
    echo = Command(key, ("EVALSHA", ECHO_SHA, 1, key, "hello"), ECHO)
    rounds = rounds_of(reader)
    assert await rounds.run([echo, _get(key)]) == ["hello", None]
    await redis_client.script_flush()  # (on every master of a cluster)
    assert await rounds.run([_get(key), echo]) == [None, "hello"]


async def test_a_lost_connection_fails_the_rounds_waiting_and_the_next_round_opens_a_link(
    settings: Settings, redis_client: Redis, reader: Redis
) -> None:
    key = f"{settings.redis.key_prefix}:{{l}}:list"
    rounds = rounds_of(reader)
    [first] = await rounds.run([Command(key, ("CLIENT", "ID"))])
    waiting = asyncio.ensure_future(rounds.run([Command(key, ("BLPOP", key, 30))]))
    node = None
    if isinstance(redis_client, RedisCluster):
        await redis_client.initialize()
        node = redis_client.get_node_from_key(key)
    await _until_blocked(redis_client, int(first), node)

    await _kill(redis_client, int(first), node)

    with pytest.raises(RedisConnectionError):
        await asyncio.wait_for(waiting, 10)  # promptly, not when BLPOP would have timed out
    [second] = await rounds.run([Command(key, ("CLIENT", "ID"))])
    assert second != first


async def _until_blocked(redis: Redis | RedisCluster, client_id: int, node: ClusterNode | None) -> None:
    """Until the server lists the client as blocked (its BLPOP arrived)."""
    while True:
        listed = await _client_list(redis, node)
        if any(int(c["id"]) == client_id and c["cmd"] == "blpop" for c in listed):
            return
        await asyncio.sleep(0.01)


async def _client_list(redis: Redis | RedisCluster, node: ClusterNode | None) -> list[dict[str, str]]:
    if isinstance(redis, RedisCluster):
        return await redis.client_list(target_nodes=node)
    return await redis.client_list()


async def _kill(redis: Redis | RedisCluster, client_id: int, node: ClusterNode | None) -> None:
    if isinstance(redis, RedisCluster):
        await redis.execute_command("CLIENT", "KILL", "ID", client_id, target_nodes=node)
    else:
        await redis.execute_command("CLIENT", "KILL", "ID", client_id)


@pytest.fixture
async def cluster(settings: Settings) -> AsyncIterator[tuple[RedisCluster, RedisCluster]]:
    """Two clients of the Redis Cluster (one changes the data, one drives rounds): the run's projection
    when it is one, else the local cluster that ``ops/test`` starts beside the single server."""
    url = settings.redis.url
    if not url.startswith("redis+cluster://"):
        url = f"redis+cluster://127.0.0.1:{os.environ.get('LB_OPS_REDIS_CLUSTER_PORT', '6380')}"
    clients = [connect_redis(url) for _ in range(2)]
    try:
        for client in clients:
            assert isinstance(client, RedisCluster)
            try:
                await client.initialize()
            except (RedisError, OSError) as exc:
                raise AssertionError(
                    f"no Redis Cluster at {url}: start it with 'ops/services up --redis-cluster' "
                    "(ops/test without arguments does)"
                ) from exc
        yield clients[0], clients[1]  # type: ignore[misc]
    finally:
        for client in clients:
            await client.aclose()


async def test_on_a_cluster_a_moved_slot_is_followed_and_a_slot_being_moved_is_asked(
    settings: Settings, cluster: tuple[RedisCluster, RedisCluster]
) -> None:
    redis_client, reader = cluster
    key = f"{settings.redis.key_prefix}:{{m{uuid.uuid4().hex[:8]}}}:k"
    await redis_client.set(key, "v")
    rounds = rounds_of(reader)
    assert await rounds.run([_get(key)]) == ["v"]  # (the reader's slot map knows the key's master)
    slot = redis_client.keyslot(key)
    home = redis_client.get_node_from_key(key)
    away = next(n for n in redis_client.get_primaries() if n.name != home.name)
    try:
        await _move(redis_client, slot, home, away, finish=True)
        assert await rounds.run([_get(key)]) == ["v"]  # MOVED: followed, and the slot map patched
        assert await rounds.run([_get(key)], in_order=True) == ["v"]

        await _move(redis_client, slot, away, home, finish=False)  # the key moved, the slot not yet
        assert await rounds.run([_get(key)]) == ["v"]  # ASK: the key asked where it is now
        with pytest.raises(Rerouted):
            await rounds.run([_get(key)], in_order=True)
    finally:
        await _settle(redis_client, slot, home)
    assert await rounds.run([_get(key)]) == ["v"]


async def _node_id(redis: RedisCluster, node: ClusterNode) -> str:
    return str(await redis.execute_command("CLUSTER", "MYID", target_nodes=node))


async def _move(
    redis: RedisCluster, slot: int, source: ClusterNode, target: ClusterNode, *, finish: bool
) -> None:
    """Move ``slot`` and its keys from ``source`` to ``target`` as redis-cli does; with ``finish``,
    every master then names ``target`` as its owner, else the slot stays migrating."""
    source_id, target_id = await _node_id(redis, source), await _node_id(redis, target)
    await redis.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id, target_nodes=target)
    await redis.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id, target_nodes=source)
    keys = await redis.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10_000, target_nodes=source)
    if keys:
        await redis.execute_command(
            "MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *keys, target_nodes=source
        )
    if finish:
        for node in redis.get_primaries():
            await redis.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id, target_nodes=node)


async def _settle(redis: RedisCluster, slot: int, home: ClusterNode) -> None:
    """The slot back on ``home``, with every key of it, and no master migrating or importing it."""
    for node in redis.get_primaries():
        if node.name != home.name:
            keys = await redis.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10_000, target_nodes=node)
            if keys:
                await redis.execute_command(
                    "MIGRATE", home.host, home.port, "", 0, 5000, "KEYS", *keys, target_nodes=node
                )
    home_id = await _node_id(redis, home)
    for node in redis.get_primaries():
        await redis.execute_command("CLUSTER", "SETSLOT", slot, "NODE", home_id, target_nodes=node)
