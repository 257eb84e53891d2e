"""Forgetting the dedupe memory's oldest copies at the start of a round. When to forget is the loop's
decision (``regions.core.forgetting``); this sends the tombstones and the memory's new completeness
bound to the dedupe changelog."""

from __future__ import annotations

from regions.core.aggregation import DedupeMemory
from regions.processor.round.state import RoundState
from schema.records import COMPLETE_KEY, dedupe_key

FORGET_BATCH = 50_000
"""Most remembered copies one round forgets (the rest in the next rounds)."""


def forget(state: RoundState, entries: list[tuple[str, int]], before_ms: int) -> None:
    """Forget the remembered copies accepted before ``before_ms``: ``entries`` are the store's
    oldest (``TaskStore.oldest_seen``). Called before any record is added: a tombstone per copy
    and the memory's new completeness bound (just after the newest copy forgotten: nothing was
    forgotten after it) go to the dedupe changelog, in the round's transaction."""
    if len(entries) >= FORGET_BATCH:
        before_ms = min(before_ms, entries[-1][1])  # part of them this round: the rest next time
    dedupe, newest = state.kafka.topic("dedupe"), None
    for event_id, at_ms in entries:
        if at_ms >= before_ms:
            break
        raw = dedupe_key(event_id)
        state.forgotten[raw] = at_ms
        held = state.store.seen(event_id)
        if held is not None and held.at_ms == at_ms:  # else an index entry of a copy replaced since
            state.out.append((dedupe, raw, None))
            state.counts["dedupe_forgotten"] += 1
            newest = at_ms if newest is None else max(newest, at_ms)
    if newest is None:
        return
    since = max(newest + 1, state.memory.complete_since_ms or newest + 1)
    state.complete_since_ms = since
    state.memory = DedupeMemory(state.memory.horizon_ms, since)
    state.out.append((dedupe, COMPLETE_KEY, since.to_bytes(8, "big", signed=True)))
