"""``python -m replicator``: copies one remote region's accepted awards into this region."""

from __future__ import annotations

import logging
import sys

from aiokafka.errors import KafkaError

from regions.runtime.health import Health, serve_health
from regions.runtime.settings import load_settings
from regions.runtime.worker import lower_priority, run_process, run_until_stopped
from replicator.config import ReplicationStopped, replication_pair
from replicator.loop import Replicator

log = logging.getLogger("replicator")

EXIT_STOPPED = 3
"""Exit status when the replicator stops for an operator (fenced, settings, topics that differ)."""


async def amain() -> int:
    """Replicate until stopped; the exit status (``EXIT_STOPPED`` when an operator must act)."""
    settings = load_settings()
    lower_priority(settings.replicator.niceness)
    try:
        pair = replication_pair(settings)
        health = Health("replicator")
        replicator = Replicator(settings, pair, health)
        health.checks["local_transactions"] = replicator.ready.is_set
        await serve_health(health, settings.intake.host, settings.replicator.health_port)
        await run_until_stopped(f"replicator from {pair.source}", replicator.run, (KafkaError,))
    except ReplicationStopped as exc:
        log.critical("stopping: %s", exc)
        # A fenced aiokafka producer leaves its batches' futures failed and never observed; their
        # tracebacks at exit would only repeat the message above.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        return EXIT_STOPPED
    return 0


def main() -> None:
    status = 0

    async def replicate() -> None:
        nonlocal status
        status = await amain()

    run_process("replicator", replicate())
    sys.exit(status)


if __name__ == "__main__":
    main()
