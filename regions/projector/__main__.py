"""``python -m regions.projector``: totals into this region's Redis projection."""

from __future__ import annotations

from aiokafka.errors import KafkaError
from redis.exceptions import RedisError

from regions.projector.loop import Projector
from regions.runtime.health import Health, serve_health
from regions.runtime.settings import load_settings
from regions.runtime.worker import lower_priority, run_process, run_until_stopped
from regions.stores.redis.control import LeaseLost, ProjectionControl
from regions.stores.redis.layouts import LayoutMoved
from regions.stores.redis.projection import RedisProjection, connect_redis


async def amain() -> None:
    settings = load_settings()
    lower_priority(settings.projector.niceness)
    health = Health("projector")
    redis, prefix = connect_redis(settings.redis), settings.redis.key_prefix
    projector = Projector(settings, RedisProjection(redis, prefix), ProjectionControl(redis, prefix), health)
    health.checks["running"] = projector.running.is_set
    await serve_health(health, settings.intake.host, settings.projector.health_port)
    await run_until_stopped("projector", projector.run, (KafkaError, RedisError, LeaseLost, LayoutMoved))


def main() -> None:
    run_process("projector", amain())


if __name__ == "__main__":
    main()
