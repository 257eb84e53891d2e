"""When a live consumer's fetches turn quiet and busy again (regions/stores/kafka/clients.py FetchPace);
that aiokafka takes the options from its fetcher is checked on the real broker
(tests/integration/regions/test_fetch_pace.py)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from regions.runtime.settings import KafkaSettings
from regions.stores.kafka.clients import FetchPace
from schema.records import HEARTBEAT_KEY, totals_key, watermark_key

KAFKA = KafkaSettings(quiet_fetch_wait_ms=900, fetch_min_bytes=4096)


def _polled(*keys: bytes) -> dict[str, list[Any]]:
    return {"tp": [SimpleNamespace(key=k) for k in keys]}


def test_a_stream_turns_quiet_only_after_a_spell_without_work_and_busy_at_its_first_award() -> None:
    fetcher = SimpleNamespace(_fetch_max_wait_ms=100, _fetch_min_bytes=4096)
    pace = FetchPace(SimpleNamespace(_fetcher=fetcher), KAFKA, quiet_after_s=0.05)  # type: ignore[arg-type]
    pace.after({})
    pace.after(_polled(HEARTBEAT_KEY))
    assert not pace.quiet  # a poll that found nothing in a flow of work: no spell yet
    time.sleep(0.06)
    pace.after(_polled(HEARTBEAT_KEY, watermark_key("eu")))
    assert pace.quiet and (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes) == (900, 1)
    pace.after(_polled(HEARTBEAT_KEY, totals_key("board", "ann")))
    assert not pace.quiet and (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes) == (100, 4096)
    time.sleep(0.06)
    pace.after({})
    assert pace.quiet
