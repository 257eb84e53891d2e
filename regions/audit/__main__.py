"""``python -m regions.audit``: applied awards into the Cassandra audit history."""

from __future__ import annotations

import asyncio
import contextlib

from aiokafka.errors import KafkaError

from regions.audit.loop import AuditSink
from regions.runtime.erasure_list import ErasureList, after
from regions.runtime.health import Health, serve_health
from regions.runtime.settings import load_settings
from regions.runtime.worker import lower_priority, run_process, run_until_stopped
from regions.stores.cassandra.audit import CassandraAudit
from regions.stores.cassandra.erasures import CassandraErasures
from regions.stores.cassandra.session import CassandraConnection


async def amain() -> None:
    settings = load_settings()
    lower_priority(settings.audit.niceness)
    health = Health("audit")
    # Connected in the background: during a Cassandra outage the sink starts, waits and reports its backlog.
    audit = CassandraConnection.to(
        settings.cassandra, lambda session: CassandraAudit(session, settings.audit.batch_rows)
    )
    erasures = CassandraConnection.to(settings.cassandra, CassandraErasures)
    erased = ErasureList(lambda: erasures.adapter, settings.intake.erasure_refresh_s)
    connecting = [asyncio.create_task(audit.run()), asyncio.create_task(erasures.run()),
                  asyncio.create_task(after(erasures.connected, erased.run))]  # fmt: skip
    sink = AuditSink(settings, audit, health, erased)
    health.checks["cassandra"] = lambda: audit.reachable() and sink.cassandra_ok
    health.checks["erasures"] = erased.loaded.is_set
    await serve_health(health, settings.intake.host, settings.audit.health_port)
    try:
        await run_until_stopped("audit", sink.run, (KafkaError,))
    finally:
        for task in connecting:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await audit.close()
        await erasures.close()


def main() -> None:
    run_process("audit", amain())


if __name__ == "__main__":
    main()
