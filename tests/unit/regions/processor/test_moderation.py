"""A processor round meets moderation records: a hidden player's states get a new version with
``hidden`` set (their awards keep counting, hidden), a restore shows them again with every award
applied meanwhile, a repeat or an older action changes nothing, and how the home's stream interleaves
with another region's never changes where a player ends up."""

from __future__ import annotations

import asyncio

from aiokafka import ConsumerRecord
from hypothesis import given
from hypothesis import strategies as st

from regions.core.moderation import Moderation
from regions.processor.restore import _Loader
from regions.processor.round import Round
from regions.stores.task_state import MemoryStore, StoreIdentity
from schema.moderation import Moderated, ModerationRecord, encode_moderation, moderated_key, moderation_key
from tests.unit.regions.processor.rounds import CODEC, EU, US, Record, Streams, award, totals_of


def _action(sequence: int, hidden: bool, user: str = "ann", boards: tuple[str, ...] = ("b",)) -> Record:
    record = ModerationRecord(board_id="b", user_id=user, sequence=sequence, hidden=hidden, region="eu",
                              at_ms=5_000, boards=list(boards), sort_order="DESC", tie_policy="USER_ID")  # fmt: skip
    return (EU, moderation_key("b", user), encode_moderation(record))


def _moderated(fold: Round) -> list[tuple[bytes, Moderated]]:
    return [
        (k, v) for t, k, raw in fold.out if t == "t.totals.v1" and isinstance(v := CODEC.totals(raw), Moderated)
    ]


def test_hiding_keeps_the_total_in_a_new_version_and_awards_keep_counting_hidden() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5)])

    hidden = streams.fold([_action(1, True), award(US, "u1", 3)])
    shown = streams.fold([_action(2, False)])

    assert [(t.total, t.version, t.hidden) for t in totals_of(hidden)] == [(5, 2, True), (8, 3, True)]
    assert [(t.total, t.version, t.hidden) for t in totals_of(shown)] == [(8, 4, False)]
    assert _moderated(hidden) == [(moderated_key("b", "ann"), Moderated(board_id="b", user_id="ann", sequence=1,
                                                                          hidden=True))]  # fmt: skip
    assert streams.store.moderation(("b", "ann")) == Moderation(2, False)
    assert hidden.counts["hidden"] == 1 and shown.counts["restored"] == 1


def test_a_repeated_or_older_action_changes_nothing() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5), _action(1, True), _action(2, False)])

    again = streams.fold([_action(2, False), _action(1, True)])  # written again; replayed from the start

    assert totals_of(again) == [] and _moderated(again) == [] and again.counts["moderation_repeat"] == 2
    player = streams.store.player(("b", "ann"))
    assert player is not None and player.version == 3


def test_a_player_hidden_before_any_award_here_is_hidden_when_their_awards_arrive() -> None:
    streams = Streams()
    early = streams.fold([_action(1, True)])
    late = streams.fold([award(US, "u1", 4)])

    assert totals_of(early) == [] and len(_moderated(early)) == 1
    assert [(t.total, t.version, t.hidden) for t in totals_of(late)] == [(4, 1, True)]


def test_the_periods_named_change_and_later_periods_find_the_action_by_the_board() -> None:
    streams = Streams()
    period = "b@2026-12-01"
    streams.fold([award(EU, "m1", 5, board=period)])  # as the processor keys a period's state

    fold = streams.fold([_action(1, True, boards=("b@2026-11-30", period))])
    later = streams.fold([award(EU, "m2", 2, board="b@2026-12-02")])

    assert [(t.board_id, t.version, t.hidden) for t in totals_of(fold)] == [(period, 2, True)]
    assert [(t.board_id, t.hidden) for t in totals_of(later)] == [("b@2026-12-02", True)]


def test_a_record_under_another_key_or_naming_another_board_is_reconciled() -> None:
    streams = Streams()
    source, _, value = _action(1, True, user="zed")
    foreign = _action(1, True, boards=("c",))

    fold = streams.fold([(source, moderation_key("b", "ann"), value), foreign])

    reasons = [CODEC.reconciliation(v).reason for t, _, v in fold.out if t == "t.reconciliation.v1"]
    assert reasons == ["unprocessable_control", "unprocessable_control"]
    assert streams.store.moderation(("b", "zed")) is None and streams.store.moderation(("b", "ann")) is None


def test_a_restore_reads_the_moderation_changelog_back() -> None:
    store = MemoryStore()
    store.reset(StoreIdentity("c", ("t.totals.v1", "t.dedupe.v1"), 0))
    loader = _Loader(store, "t.totals.v1")
    value = CODEC.encode(Moderated(board_id="b", user_id="ann", sequence=3, hidden=True))

    async def load() -> None:
        await loader([ConsumerRecord("t.totals.v1", 0, 0, 0, 0, moderated_key("b", "ann"), value, None, 0, 0, [])])
        await loader.written()

    asyncio.run(load())
    assert store.moderation(("b", "ann")) == Moderation(3, True)


@given(
    actions=st.lists(st.booleans(), min_size=1, max_size=5),
    eu=st.lists(st.integers(1, 50), max_size=4),
    us=st.lists(st.integers(1, 50), max_size=4),
    order=st.randoms(use_true_random=False),
    rounds=st.integers(1, 4),
)
def test_any_interleaving_of_the_streams_ends_in_the_last_actions_state(
    actions: list[bool], eu: list[int], us: list[int], order: object, rounds: int
) -> None:
    """The home's stream (its awards and actions, in order) and another region's awards interleave
    in any way, with rounds ending anywhere: the player ends with every award counted and hidden
    exactly when the last action hid them."""
    eu_stream = [award(EU, f"e{i}", a) for i, a in enumerate(eu)]
    eu_stream += [_action(i + 1, hidden) for i, hidden in enumerate(actions)]
    us_stream = [award(US, f"u{i}", a) for i, a in enumerate(us)]
    merged, streams, last = [], Streams(), None
    while eu_stream or us_stream:
        pick = eu_stream if not us_stream or (eu_stream and order.random() < 0.5) else us_stream  # type: ignore[attr-defined]
        merged.append(pick.pop(0))
    size = -(-len(merged) // rounds)
    for first in range(0, len(merged), size):
        totals = totals_of(streams.fold(merged[first : first + size]))
        last = totals[-1] if totals else last
    player = streams.store.player(("b", "ann"))
    if eu or us:
        assert player is not None and player.total == sum(eu) + sum(us)
        assert last is not None and (last.total, last.version, last.hidden) == (player.total, player.version,
                                                                                actions[-1])  # fmt: skip
    assert streams.store.moderation(("b", "ann")) == Moderation(len(actions), actions[-1])
