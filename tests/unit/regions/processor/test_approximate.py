"""Rounds of an approximate board: awards counted in the partition's sketch, candidates written as
estimated totals with their list's version (and their verified exact counts), evicted ones as
tombstones, the partition's total on the companion board; a restore from the changelog records
rebuilds the same counters and list; an erasure takes an item off every list (its later awards only
counted, anonymously), a moderation action writes a listed item's candidate hidden or shown."""

from __future__ import annotations

import random

from aiokafka import ConsumerRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from regions.core.aggregation import copy_of, copy_order
from regions.core.candidates import CandidateList
from regions.processor.restore import _Loader
from regions.processor.round import Round, Source
from regions.stores.task_state import MemoryStore, StoreBatch
from schema.erasure import ErasureRecord, encode_erasure, erasure_key, erasure_token
from schema.event_id import event_id, payload_digest
from schema.moderation import ModerationRecord, encode_moderation, moderation_key
from schema.records import AwardEvent, totals_key
from tests.unit.regions.processor.rounds import CODEC, EU, US, Record, Streams, totals_of

TOTALS = "t.totals.v1"


def play(source: Source, match: str, item: str, amount: int = 1, board: str = "tr") -> Record:
    event = AwardEvent(
        event_id=event_id(board, match, item, "play"), digest=payload_digest(amount, None), board_id=board,
        match_id=match, user_id=item, award_type="play", amount=amount, occurred_at_ms=None,
        region=source.region, accepted_at_ms=1_000, aggregation="SUM", sort_order="DESC",
        tie_policy="USER_ID", approximate="2,0.01,0.01",
    )  # fmt: skip
    return (source, totals_key(board, item), CODEC.encode(event))


def test_candidates_are_the_best_estimates_with_the_lists_version() -> None:
    streams = Streams()
    fold = streams.fold([play(EU, f"m{i}", f"song{i % 7}") for i in range(50)] + [play(US, "m1", "song1")])
    assert fold.counts["applied"] == 50 and fold.counts["duplicate"] == 1  # the copy from us counts once
    sent = {(t.board_id, t.user_id): (t.total, t.version, t.estimated) for t in totals_of(fold)}
    assert sent == {("tr", "song0"): (8, 1, True), ("tr", "song1"): (7, 1, True), ("tr", "song2"): (7, 1, True),
                    ("tr", "song3"): (7, 1, True), ("tr#counts", "p0"): (50, 1, True)}  # fmt: skip
    assert streams.store.candidates("tr").version == 1 and streams.store.candidates("tr").total == 50
    assert streams.store.player(("tr", "song0")) is None  # no player state for an item


def test_an_item_pushed_out_leaves_as_a_tombstone() -> None:
    streams = Streams()
    streams.fold([play(EU, f"a{i}", item, 3) for i, item in enumerate(["x", "y", "z", "w"])])
    fold = streams.fold([play(EU, "b", "v", 5)])
    gone = [key for topic, key, value in fold.out if topic == TOTALS and value is None]
    assert gone == [totals_key("tr", "z")]  # all at 3: the largest id ranks worst
    assert [t.version for t in totals_of(fold)] == [2, 2]  # v, and the partition's total


def _restored(rounds: list[Round]) -> MemoryStore:
    """A store restored from the totals changelog records of ``rounds``."""
    records = [
        ConsumerRecord(TOTALS, 0, n, 0, 0, key, value, None, 0, 0, [])
        for n, (topic, key, value) in enumerate(out for fold in rounds for out in fold.out)
        if topic == TOTALS
    ]
    restored, batch = MemoryStore(), StoreBatch()
    _Loader(restored, TOTALS)._totals_records(batch, records)
    restored.write(batch)
    return restored


def test_a_restore_from_the_changelog_gives_the_same_counters() -> None:
    streams = Streams()
    rounds: list[Round] = [
        streams.fold([play(EU, f"r{r}m{i}", f"song{(i * 7 + r) % 23}", i % 4 + 1) for i in range(40)])
        for r in range(5)
    ]
    restored = _restored(rounds)
    assert restored._sketch == streams.store._sketch and restored._sketch
    assert (
        restored.candidates("tr") == streams.store.candidates("tr") and not restored.candidates("tr").lossless
    )
    assert restored.players_count() == 0
    listed = [item for item, _ in restored.candidates("tr").items]
    assert all(restored.candidate_lists_of(item) == ["tr"] for item in listed)


def _shown(fold: Round) -> dict[tuple[str, str], tuple[int, int | None, bool]]:
    """(board, item) -> (estimate, verified count, hidden) of each candidate the round writes."""
    return {(t.board_id, t.user_id): (t.total, t.exact, t.hidden) for t in totals_of(fold)}


def _gone(fold: Round) -> list[bytes]:
    return [key for topic, key, value in fold.out if topic == TOTALS and value is None]


def test_verified_counts_go_with_the_candidates_and_an_item_back_after_leaving_is_not_verified() -> None:
    streams = Streams()  # k 2: 4 candidates
    first = streams.fold([play(EU, "a1", "x", 5), play(EU, "a2", "y", 3), play(US, "a1", "x", 5)])
    assert _shown(first) == {("tr", "x"): (5, 5, False), ("tr", "y"): (3, 3, False),
                             ("tr#counts", "p0"): (8, None, False)}  # fmt: skip
    second = streams.fold([play(EU, "a3", "y", 1), play(EU, "a4", "z", 9), play(EU, "a5", "w", 1)])
    assert _shown(second) == {("tr", "y"): (4, 4, False), ("tr", "z"): (9, 9, False), ("tr", "w"): (1, 1, False),
                              ("tr#counts", "p0"): (19, None, False)}  # fmt: skip
    # v joins in place of w (the list had dropped nothing: v is verified), w's next award is refused
    third = streams.fold([play(EU, "a6", "v", 20), play(EU, "a7", "w", 1)])
    assert _shown(third) == {("tr", "v"): (20, 20, False), ("tr#counts", "p0"): (40, None, False)}
    assert _gone(third) == [totals_key("tr", "w")] and not streams.store.candidates("tr").lossless
    fourth = streams.fold([play(EU, "a8", "w", 10)])  # w back in place of y: its first 2 were not kept
    assert _shown(fourth) == {("tr", "w"): (12, None, False), ("tr#counts", "p0"): (50, None, False)}
    assert _gone(fourth) == [totals_key("tr", "y")]
    assert streams.store.candidates("tr").exact_of()["w"] == (10, False)
    assert _restored([first, second, third, fourth]).candidates("tr") == streams.store.candidates("tr")


def _erasure(user: str) -> Record:
    token = erasure_token(user)
    record = ErasureRecord(user_id=user, token=token, region="us", requested_at_ms=9)
    return (US, erasure_key(token), encode_erasure(record))


def _hide(user: str, board: str = "tr", hidden: bool = True, sequence: int = 1) -> Record:
    record = ModerationRecord(board_id=board, user_id=user, sequence=sequence, hidden=hidden, region="eu",
                              at_ms=5, boards=[board], sort_order="DESC", tie_policy="USER_ID")  # fmt: skip
    return (EU, moderation_key(board, user), encode_moderation(record))


def test_an_erased_item_leaves_every_list_and_its_later_awards_count_unlisted() -> None:
    streams = Streams()
    first = streams.fold([play(EU, "a1", "x", 5), play(EU, "a2", "y", 3), play(EU, "a3", "x", 2, board="tq")])
    assert streams.store.candidate_lists_of("x") == ["tq", "tr"]

    fold = streams.fold(
        [play(EU, "a4", "x", 1), _erasure("x"), play(EU, "a5", "x", 4), play(US, "a6", "y", 1)]
    )

    assert sorted(_gone(fold)) == [totals_key("tq", "x"), totals_key("tr", "x")]
    assert _shown(fold) == {("tr", "y"): (4, 4, False), ("tr#counts", "p0"): (14, None, False)}
    assert streams.store.candidates("tq") == CandidateList(2, 2, (), (), False)
    assert streams.store.candidate_lists_of("x") == [] and streams.store.erased(erasure_token("x"))
    assert fold.counts["erased_candidates"] == 2 and fold.counts["erased_counted"] == 1
    applied = [CODEC.applied(v).award.match_id for t, _, v in fold.out if t == "t.applied.v1" and v]
    assert applied == ["a4", "a6"] and not any(t == "t.reconciliation.v1" for t, _, _ in fold.out)
    assert (
        streams.store.candidates("tr").total == 5 + 3 + 1 + 4 + 1
    )  # x's 4 after the erasure too, anonymously
    again = streams.fold([_erasure("x")])
    assert again.counts["erasure_repeat"] == 1 and again.out == []
    restored = _restored([first, fold])
    assert (
        restored.candidates("tr") == streams.store.candidates("tr") and restored.candidate_lists_of("x") == []
    )


def test_hiding_a_listed_item_writes_its_candidate_hidden_and_showing_it_again_back() -> None:
    streams = Streams()
    streams.fold([play(EU, "a1", "x", 5), play(EU, "a2", "y", 3)])

    hidden = streams.fold([_hide("x"), _hide("z")])  # z is not listed: nothing to write
    assert _shown(hidden) == {("tr", "x"): (5, 5, True)}
    assert [t.version for t in totals_of(hidden)] == [2] and streams.store.candidates("tr").version == 2
    counted = streams.fold([play(EU, "a3", "x", 1), play(EU, "a4", "z", 2)])
    assert _shown(counted) == {("tr", "x"): (6, 6, True), ("tr", "z"): (2, 2, True),
                               ("tr#counts", "p0"): (11, None, False)}  # fmt: skip
    shown = streams.fold([_hide("x", hidden=False, sequence=2)])
    assert _shown(shown) == {("tr", "x"): (6, 6, False)}


def _projected(rounds: list[Round]) -> dict[str, tuple[int, int | None]]:
    """What a projection of the rounds' totals shows of board tr: the newest version per item."""
    shown: dict[str, tuple[int, int, int | None]] = {}
    for fold in rounds:
        for topic, key, value in fold.out:
            if topic == TOTALS and value is None:
                shown.pop(key.decode().partition("|")[2], None)
        for t in totals_of(fold):
            if t.board_id == "tr" and t.version > shown.get(t.user_id, (-1, 0, None))[0]:
                shown[t.user_id] = (t.version, t.total, t.exact)
    return {item: (total, exact) for item, (_, total, exact) in shown.items()}


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("wxyz"), st.integers(0, 5), st.integers(0, 9),
                       st.sampled_from(["eu", "us", "both"])), min_size=1, max_size=30),
    st.randoms(use_true_random=False),
)  # fmt: skip
def test_two_regions_reading_the_streams_in_any_interleaving_show_the_same_verified_candidates(
    plays: list[tuple[str, int, int, str]], rnd: random.Random
) -> None:
    """Awards accepted in eu, in us, or in both (one event, two copies): two regions read eu's and
    us's streams interleaved otherwise and cut into other rounds; with room for every item both
    show every item at the same estimate, verified at its true count."""
    eu = [play(EU, f"m{m}", item, amount) for item, m, amount, where in plays if where != "us"]
    us = [play(US, f"m{m}", item, amount) for item, m, amount, where in plays if where != "eu"]
    shown = []
    for _ in range(2):
        streams, pending, rounds = Streams(), [list(eu), list(us)], []
        while pending[0] or pending[1]:
            batch = [
                rnd.choice([p for p in pending if p]).pop(0)
                for _ in range(rnd.randint(1, 6))
                if pending[0] or pending[1]
            ]
            rounds.append(streams.fold(batch))
        shown.append(_projected(rounds))
    winners: dict[str, AwardEvent] = {}
    for _, _, value in eu + us:
        a = CODEC.award(value)
        if a.event_id not in winners or copy_order(copy_of(a)) < copy_order(copy_of(winners[a.event_id])):
            winners[a.event_id] = a
    truth: dict[str, int] = {}
    for a in winners.values():
        truth[a.user_id] = truth.get(a.user_id, 0) + a.amount
    assert shown[0] == shown[1] and set(shown[0]) == set(truth)
    assert all(exact == truth[item] <= estimate for item, (estimate, exact) in shown[0].items())
