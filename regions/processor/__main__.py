"""``python -m regions.processor``: the stateful processor of one region."""

from __future__ import annotations

from aiokafka.errors import KafkaError

from regions.processor.loop import Processor
from regions.runtime.health import Health, serve_health
from regions.runtime.settings import load_settings
from regions.runtime.worker import lower_priority, run_process, run_until_stopped


async def amain() -> None:
    settings = load_settings()
    lower_priority(settings.processor.niceness)
    health = Health("processor")
    processor = Processor(settings, health)
    health.checks["restored"] = processor.restored.is_set
    await serve_health(health, settings.intake.host, settings.processor.health_port)
    # The state in memory may be ahead of Kafka after an error: each run restores it from the changelog.
    await run_until_stopped("processor", processor.run, (KafkaError,))


def main() -> None:
    run_process("processor", amain())


if __name__ == "__main__":
    main()
