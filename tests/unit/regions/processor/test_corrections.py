"""A processor round meets correction records of a closed board: each sets the player's total as a new
version once the partition has every region's cutoff of the board, once per (correction, player);
one met before that waits in the store, and a reference fold shows the order of arrival never
matters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.cli.reconciliation import board_and_user
from regions.processor.round import Round, Source
from schema.event_id import correction_event_id
from schema.lifecycle import (
    CorrectionRecord,
    CorrectionsHeld,
    CutoffMarker,
    LifecycleCodec,
    correction_key,
    cutoff_marker_key,
)
from tests.unit.regions.processor.rounds import CODEC, EU, US, Record, Streams, award, totals_of

LIFECYCLE = LifecycleCodec()


def _marker(source: Source) -> Record:
    marker = CutoffMarker(board_id="b", region=source.region, closing_at_ms=1, written_at_ms=2)
    return (source, cutoff_marker_key("b"), LIFECYCLE.encode(marker))


def _correction(
    score: int,
    version: int,
    correction_id: str = "c1",
    user: str = "ann",
    regions: tuple[str, ...] = ("eu", "us"),
) -> Record:
    record = CorrectionRecord(board_id="b", correction_id=correction_id, user_id=user, score=score,
                              result_version=version, created_at_ms=5_000, region="eu", sort_order="DESC",
                              tie_policy="USER_ID", regions=list(regions))  # fmt: skip
    return (EU, correction_key("b", user), LIFECYCLE.encode(record))


def _held(fold: Round) -> list[CorrectionsHeld]:
    return [
        v
        for t, _, raw in fold.out
        if t == "t.totals.v1" and isinstance(v := CODEC.totals(raw), CorrectionsHeld)
    ]


def test_a_correction_sets_the_total_as_the_next_version_once() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5), award(EU, "m2", 3), _marker(EU)])
    reached = streams.store.player(("b", "ann"))
    assert reached is not None

    fold = streams.fold([_correction(42, 2, regions=("eu",)), _correction(42, 2, regions=("eu",))])
    again = streams.fold(
        [_correction(42, 2, regions=("eu",))]
    )  # the home region wrote its records again (a restart)

    totals = totals_of(fold)
    assert [(t.total, t.version, t.reached, t.source_offset) for t in totals] == [(42, 3, reached.reached, 3)]
    assert totals[0].event_id == correction_event_id("b", "c1", "ann")
    assert fold.counts["correction_repeat"] == 1 and totals_of(again) == []
    assert streams.store.player(("b", "ann")) == type(reached)(42, 3, reached.reached)


def test_a_correction_before_every_cutoff_waits_and_then_applies_in_version_order() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5), _marker(EU)])
    early = streams.fold([_correction(42, 2), _correction(10, 3, "c2"), _correction(42, 2)])
    assert totals_of(early) == [] and early.counts["correction_held"] == 2
    assert [len(h.corrections) for h in _held(early)] == [1, 2]
    assert [h.correction.result_version for h in streams.store.held("b")] == [2, 3]

    late = streams.fold([award(US, "m2", 7), _marker(US)])  # us's awards before its cutoff count first

    assert [(t.total, t.version) for t in totals_of(late)] == [(12, 2), (42, 3), (10, 4)]
    assert streams.store.player(("b", "ann")) is not None and streams.store.held("b") == ()
    assert _held(late)[-1].corrections == []  # the changelog says nothing is held any more


def test_a_correction_of_a_player_without_a_total_and_a_wrong_key_are_reconciled() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5), _marker(EU)])
    source, _, value = _correction(42, 2, user="zed", regions=("eu",))
    wrong = (source, correction_key("b", "ann"), value)  # zed's correction under ann's key

    fold = streams.fold([_correction(42, 2, user="zed", regions=("eu",)), wrong])

    reasons = [CODEC.reconciliation(v).reason for t, _, v in fold.out if t == "t.reconciliation.v1"]
    assert reasons == ["correction_unknown_player", "unprocessable_control"]
    assert totals_of(fold) == [] and streams.store.player(("b", "zed")) is None


@given(
    eu=st.lists(st.integers(1, 50), max_size=4),
    us=st.lists(st.integers(1, 50), min_size=1, max_size=4),
    order=st.randoms(use_true_random=False),
    rounds=st.integers(1, 4),
)
def test_any_interleaving_of_the_streams_ends_at_the_corrected_score(
    eu: list[int], us: list[int], order: object, rounds: int
) -> None:
    """Each stream keeps its order (awards, its marker, then eu's corrections); how the two streams
    interleave and where rounds end changes nothing: the last correction's score, one version per
    award and correction."""
    eu_stream = [award(EU, f"e{i}", a) for i, a in enumerate(eu)] + [_marker(EU)]
    eu_stream += [_correction(99, 2), _correction(-7, 3, "c2"), _correction(99, 2)]
    us_stream = [award(US, f"u{i}", a) for i, a in enumerate(us)] + [_marker(US)]
    merged, streams = [], Streams()
    while eu_stream or us_stream:
        pick = eu_stream if not us_stream or (eu_stream and order.random() < 0.5) else us_stream  # type: ignore[attr-defined]
        merged.append(pick.pop(0))
    size = -(-len(merged) // rounds)
    for first in range(0, len(merged), size):
        streams.fold(merged[first : first + size])
    state = streams.store.player(("b", "ann"))
    assert state is not None and (state.total, state.version) == (-7, len(eu) + len(us) + 2)
    assert streams.store.held("b") == ()


def test_a_reconciled_correction_is_found_by_its_board() -> None:
    streams = Streams()
    streams.fold([award(EU, "m1", 5), _marker(EU)])
    fold = streams.fold([_correction(42, 2, user="zed", regions=("eu",))])
    [(key, value)] = [(k, v) for t, k, v in fold.out if t == "t.reconciliation.v1"]
    assert board_and_user(key, CODEC.reconciliation(value)) == ("b", "zed")
