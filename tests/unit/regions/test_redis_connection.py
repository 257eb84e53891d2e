"""Choosing one server or a Redis Cluster by the projection's URL."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis, RedisCluster

from regions.redis_connection import InvalidRedisUrlError, connect_redis, is_cluster_url


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
