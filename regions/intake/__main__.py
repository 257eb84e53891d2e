"""``python -m regions.intake``: the award intake of one region."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import uvicorn
from cassandra.cluster import Session
from starlette.applications import Starlette

from regions.core.boards import Board
from regions.intake.app import create_app
from regions.intake.asgi import IntakeApp
from regions.intake.heartbeats import HeartbeatWriter
from regions.intake.protocol import IntakeProtocol
from regions.intake.waits import ProjectionWaits
from regions.runtime.erasure_list import ErasureList, after
from regions.runtime.health import Health
from regions.runtime.reuseport import serve_processes
from regions.runtime.settings import Settings
from regions.runtime.worker import process_settings, run_process
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.erasures import CassandraErasures
from regions.stores.cassandra.session import CassandraConnection
from regions.stores.kafka.clients import (
    AcceptanceUnavailable,
    AwardPublisher,
    RenewableProducer,
    make_producer,
)
from regions.stores.kafka.home import HomePublishers


@dataclass(frozen=True, slots=True)
class IntakeStores:
    catalog: CassandraCatalog
    erasures: CassandraErasures

    @staticmethod
    def of(session: Session) -> IntakeStores:
        return IntakeStores(CassandraCatalog(session), CassandraErasures(session))


def build(settings: Settings) -> IntakeApp:
    """The intake app. Kafka is opened in its lifespan, and the region's heartbeat runs there;
    Cassandra is connected in the background, so the intake starts during a Cassandra outage and
    serves every board it can resolve once it has read the erasure list (ready from then on). Redis is connected only for a ``?wait=applied``, another
    region's Kafka only for the first award of a board HOME_ROUTED there."""
    catalog = CassandraConnection.to(settings.cassandra, IntakeStores.of)
    erased = ErasureList(lambda: catalog.adapter.erasures, settings.intake.erasure_refresh_s)
    publisher: AwardPublisher | None = None

    async def publish(records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        if publisher is None:
            raise AcceptanceUnavailable("the Kafka producer is not started yet")
        return await publisher.publish(records)

    async def boards(board_id: str) -> Board | None:
        return await catalog.adapter.catalog.get(board_id)

    health = Health(
        "intake",
        {"kafka": lambda: publisher is not None, "catalog": catalog.connected.is_set, "erasures": erased.loaded.is_set},
        advisory={"cassandra": catalog.reachable},
    )
    waits = ProjectionWaits(settings)
    homes = HomePublishers(settings)
    app = create_app(settings, boards, publish, health, waits, homes.publish, erased)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        nonlocal publisher
        connecting = asyncio.create_task(catalog.run())
        refreshing = asyncio.create_task(after(catalog.connected, erased.run))
        producer = RenewableProducer(lambda: make_producer(settings.kafka))
        await producer.start()
        publisher = AwardPublisher(
            producer, settings.kafka.topic("awards"), settings.kafka.delivery_timeout_s
        )
        heartbeat = HeartbeatWriter(
            producer, settings.kafka.topic("awards"), settings.region, settings.intake.heartbeat_interval_s
        )
        beating = asyncio.create_task(heartbeat.run())
        try:
            yield
        finally:
            publisher = None
            for task in (connecting, beating, refreshing):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await producer.stop()
            await homes.close()
            await catalog.close()
            await waits.close()

    app.rest.router.lifespan_context = lifespan
    return app


async def serve(settings: Settings, sock: socket.socket | None) -> None:
    intake = settings.intake
    config = uvicorn.Config(
        build(settings), host=intake.host, port=intake.port, access_log=False,
        timeout_keep_alive=intake.keep_alive_s, http=IntakeProtocol,
    )  # fmt: skip
    await uvicorn.Server(config).serve(sockets=None if sock is None else [sock])


def main() -> None:
    settings = process_settings("intake")
    intake = settings.intake
    serve_processes(
        intake.workers, intake.host, intake.port, lambda sock: run_process("intake", serve(settings, sock))
    )


if __name__ == "__main__":
    main()
