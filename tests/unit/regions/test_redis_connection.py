"""Choosing one server or a Redis Cluster by the projection's URL; packing commands."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.connection import Connection, SSLConnection
from redis.exceptions import DataError

from regions.stores.redis.connection import (
    InvalidRedisUrlError,
    PackedConnection,
    PackedSSLConnection,
    connect_redis,
    is_cluster_url,
)


async def test_a_cluster_url_makes_a_cluster_client_through_the_named_node() -> None:
    client = connect_redis("redis+cluster://10.0.0.7:7001")
    try:
        assert isinstance(client, RedisCluster)
        assert [(node.host, node.port) for node in client.startup_nodes] == [("10.0.0.7", 7001)]
    finally:
        await client.aclose()


async def test_a_plain_url_makes_a_single_server_client() -> None:
    client = connect_redis("redis://127.0.0.1:6379/2", max_connections=8, blocking=True)
    try:
        assert isinstance(client, Redis)
        assert client.connection_pool.connection_kwargs["db"] == 2
        assert client.connection_pool.max_connections == 8
    finally:
        await client.aclose()


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "cluster://127.0.0.1:6380", "127.0.0.1:6379"])
def test_an_unknown_scheme_is_refused_with_the_schemes_it_takes(url: str) -> None:
    with pytest.raises(InvalidRedisUrlError, match=r"redis\+cluster://"):
        connect_redis(url)


def test_cluster_urls_are_told_apart() -> None:
    assert is_cluster_url("redis+cluster://h:1") and is_cluster_url("rediss+cluster://h:1")
    assert not is_cluster_url("redis://h:1/0") and not is_cluster_url("rediss://h:1")


@pytest.mark.parametrize(
    ("url", "kind"), [("redis://127.0.0.1:6379/0", Connection), ("rediss://h:6380", SSLConnection)]
)
async def test_a_single_server_client_packs_commands_in_c_into_the_same_bytes(
    url: str, kind: type[Connection]
) -> None:
    client = connect_redis(url)
    try:
        assert isinstance(client, Redis)
        connection = client.connection_pool.make_connection()  # type: ignore[no-untyped-call]
        assert isinstance(connection, kind) and isinstance(
            connection, (PackedConnection, PackedSSLConnection)
        )
        python = kind(host="h")
        command = (
            "EVALSHA",
            "f" * 40,
            2,
            "{b}:r",
            "{b}:s",
            "é",
            7,
            2.5,
            -0.0,
            1e300,
            1 / 3,
            b"\x00\xff",
            "a" * 70_000,
        )
        assert b"".join(connection.pack_command(*command)) == b"".join(python.pack_command(*command))
        for bad in (True, None):
            with pytest.raises(DataError):
                connection.pack_command("SET", "k", bad)
    finally:
        await client.aclose()
