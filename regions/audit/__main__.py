"""``python -m regions.audit``: applied awards into the Cassandra audit history."""

from __future__ import annotations

import os

from aiokafka.errors import KafkaError

from regions.audit.loop import AuditSink
from regions.cassandra_audit import CassandraAudit
from regions.cassandra_store import connect
from regions.health import Health, serve_health
from regions.settings import load_settings
from regions.worker import run_process, run_until_stopped


async def amain() -> None:
    settings = load_settings()
    os.nice(settings.audit.niceness)
    health = Health("audit")
    _, session = connect(settings.cassandra)
    sink = AuditSink(settings, CassandraAudit(session), health)
    health.checks["cassandra"] = lambda: sink.cassandra_ok
    await serve_health(health, settings.intake.host, settings.audit.health_port)
    await run_until_stopped("audit", sink.run, (KafkaError,))


def main() -> None:
    run_process("audit", amain())


if __name__ == "__main__":
    main()
