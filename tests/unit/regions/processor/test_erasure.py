"""A processor round meets erasure records: every state of the player in the partition goes, each with
a tombstone, with its moderation and day index entries; the erasure list keeps the player's token,
so any later award, correction or moderation of theirs is dropped (never reconciled: that would keep
the id), in this round and after a restore; a lift takes them back."""

from __future__ import annotations

import asyncio

from aiokafka import ConsumerRecord

from regions.processor.restore import _Loader
from regions.stores.task_state import MemoryStore, StoreIdentity
from schema.erasure import Erased, ErasureRecord, encode_erasure, erased_key, erasure_key, erasure_token
from schema.moderation import ModerationRecord, encode_moderation, moderated_key, moderation_key
from schema.records import totals_key
from tests.unit.regions.processor.rounds import CODEC, EU, US, Record, Source, Streams, award, totals_of


def _erasure(user: str = "ann", lifted: bool = False, source: Source = US) -> Record:
    token = erasure_token(user)
    record = ErasureRecord(user_id=user, token=token, region=source.region, requested_at_ms=9, lifted=lifted)
    return (source, erasure_key(token), encode_erasure(record))


def _hide(user: str = "ann") -> Record:
    record = ModerationRecord(board_id="b", user_id=user, sequence=1, hidden=True, region="eu", at_ms=5,
                              boards=["b"], sort_order="DESC", tie_policy="USER_ID")  # fmt: skip
    return (EU, moderation_key("b", user), encode_moderation(record))


def _out(fold: object) -> list[tuple[str, bytes, bytes | None]]:
    return fold.out  # type: ignore[attr-defined, no-any-return]


def test_every_state_goes_with_a_tombstone_and_later_records_of_the_player_are_dropped() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5), award(EU, "m2", 3, board="c@2026-12-01"), award(EU, "m3", 4, user="bob"),
                  _hide()])  # fmt: skip

    fold = streams.fold([award(EU, "m4", 1, board="d"), _erasure(), award(EU, "m5", 7), _hide()])

    tombstones = [k for t, k, v in _out(fold) if t == "t.totals.v1" and v is None]
    assert sorted(tombstones) == sorted([totals_key("b", "ann"), totals_key("c@2026-12-01", "ann"),
                                         totals_key("d", "ann"), moderated_key("b", "ann")])  # fmt: skip
    assert fold.counts["erased_players"] == 3 and fold.counts["dropped"] == 2
    assert [t.total for t in totals_of(fold)] == [1]  # d's award came before the erasure
    applied = [CODEC.applied(v).award.match_id for t, _, v in _out(fold) if t == "t.applied.v1" and v]
    assert applied == ["m4"] and not any(t == "t.reconciliation.v1" for t, _, _ in _out(fold))
    store = streams.store
    assert store.states_of("ann") == [] and store.player(("b", "ann")) is None and store.moderation(("b", "ann")) is None
    assert store.erased(erasure_token("ann")) and store.player(("b", "bob")) is not None

    later = streams.fold([award(US, "m6", 2), _erasure()])  # a replicated copy of the erasure: nothing left
    assert totals_of(later) == [] and later.counts["dropped"] == 1 and later.counts["erasure_repeat"] == 1
    assert not any(t == "t.reconciliation.v1" for t, _, _ in _out(later))


def test_a_lift_takes_the_player_back() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5), _erasure()])

    fold = streams.fold([_erasure(lifted=True), award(EU, "m2", 3)])

    assert [(t.total, t.version) for t in totals_of(fold)] == [(3, 1)]
    assert not streams.store.erased(erasure_token("ann"))


def test_a_restore_drops_erased_states_and_keeps_the_erasure_list() -> None:
    store = MemoryStore()
    store.reset(StoreIdentity("c", ("t.totals.v1", "t.dedupe.v1"), 0))
    loader = _Loader(store, "t.totals.v1")
    streams = Streams()
    first = streams.fold([award(EU, "m1", 5), award(EU, "m2", 4, user="bob"), _hide()])
    second = streams.fold([_erasure()])
    records = [ConsumerRecord("t.totals.v1", 0, i, 0, 0, k, v, None, 0, 0, [])
               for i, (t, k, v) in enumerate(_out(first) + _out(second)) if t == "t.totals.v1"]  # fmt: skip

    async def load() -> None:
        await loader(records)
        await loader.written()

    asyncio.run(load())
    assert store.states_of("ann") == [] and store.moderation(("b", "ann")) is None
    assert store.erased(erasure_token("ann")) and store.states_of("bob") == [("b", "bob")]
    assert CODEC.totals(next(v for t, k, v in _out(second) if k == erased_key(erasure_token("ann")) and v)) == \
        Erased(token=erasure_token("ann"))  # fmt: skip
