"""A restore reads the dedupe changelog as live processing wrote it: copies, tombstones of forgotten
copies and the completeness bound, so a restored memory decides exactly as the live one did (never
from the wall clock)."""

from __future__ import annotations

import asyncio

from aiokafka import ConsumerRecord

from regions.processor.restore import _Loader
from regions.stores.task_state import MemoryStore, StoreIdentity
from schema.records import COMPLETE_KEY, pack_seen

A, B = "aa" * 16, "bb" * 16


def _record(offset: int, key: bytes, value: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("t.dedupe.v1", 0, offset, 0, 0, key, value, None, 0, 0, [])


def test_tombstones_and_the_completeness_bound_restore_as_written() -> None:
    store = MemoryStore()
    store.reset(StoreIdentity("c", ("t.totals.v1", "t.dedupe.v1"), 0))
    loader = _Loader(store, "t.totals.v1")
    records = [
        _record(0, bytes.fromhex(A), pack_seen("00" * 8, 10, "eu", 5)),
        _record(1, bytes.fromhex(B), pack_seen("11" * 8, 20)),  # written before amounts were kept
        _record(2, bytes.fromhex(A), None),  # forgotten
        _record(3, COMPLETE_KEY, (15).to_bytes(8, "big", signed=True)),
        _record(4, bytes.fromhex(B), pack_seen("22" * 8, 30, "us", -2)),  # replaced by a winner
    ]

    async def load() -> None:
        await loader(records)
        await loader.written()

    asyncio.run(load())
    assert store.seen(A) is None
    seen_b = store.seen(B)
    assert seen_b is not None and (seen_b.at_ms, seen_b.region, seen_b.amount) == (30, "us", -2)
    assert store.complete_since_ms() == 15
    assert store.changelog_positions() == {"t.dedupe.v1": 5}
