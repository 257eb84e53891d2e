"""Award metadata: validated at the edge, part of the payload, and shown for the award that holds
the score (SUM: the newest; MAX/MIN: the one that reached the best), also when a copy wins."""

from __future__ import annotations

import hashlib

import msgspec
import pytest

from regions.core.aggregation import (
    KEPT_CONTRIBUTIONS,
    Applied,
    Conflict,
    DedupeMemory,
    Outcome,
    PlayerState,
    Replaced,
    Seen,
    apply_award,
)
from regions.core.boards import Aggregation
from regions.core.corrections import Corrected, apply_correction
from regions.core.metadata import MAX_METADATA_BYTES, canonical_metadata
from regions.core.rolling import apply_rolling, expire
from regions.core.validation import Invalid, Parsed, parse_request
from schema.event_id import payload_digest
from schema.lifecycle import CorrectionRecord
from schema.records import AwardEvent
from tests.unit.regions.core.strategies import award

GOOD = {"matchId": "m1", "leaderboardId": "weekly", "userId": "alice", "awardType": "kill", "delta": 5}
MEMORY = DedupeMemory(horizon_ms=1_000_000)


# ---- validation


def test_metadata_is_kept_as_canonical_json_text() -> None:
    result = parse_request({**GOOD, "metadata": {"map": "dust", "kills": [1, 2], "é": None}}, max_batch=10)
    assert isinstance(result, Parsed)
    assert result.awards[0].metadata == '{"kills":[1,2],"map":"dust","é":null}'


def test_an_award_without_metadata_or_with_an_empty_object_has_none() -> None:
    for body in (GOOD, {**GOOD, "metadata": {}}):
        result = parse_request(body, max_batch=10)
        assert isinstance(result, Parsed) and result.awards[0].metadata == ""


@pytest.mark.parametrize("value", [None, [1], "x", 3, True])
def test_metadata_that_is_not_an_object_is_refused_by_name(value: object) -> None:
    result = parse_request({"awards": [GOOD, {**GOOD, "metadata": value}]}, max_batch=10)
    assert isinstance(result, Invalid)
    assert [(e.field, e.rule) for e in result.errors] == [("awards[1].metadata", "must be a JSON object")]


def test_metadata_over_the_size_limit_is_refused_and_at_the_limit_is_not() -> None:
    filler = MAX_METADATA_BYTES - len('{"k":""}')
    at_limit = {"k": "x" * filler}
    assert len(canonical_metadata(at_limit).encode()) == MAX_METADATA_BYTES
    assert isinstance(parse_request({**GOOD, "metadata": at_limit}, max_batch=10), Parsed)
    over = {"k": "é" * (filler // 2 + 1)}  # two bytes each in UTF-8: the limit is on bytes
    result = parse_request({**GOOD, "metadata": over}, max_batch=10)
    assert isinstance(result, Invalid)
    [error] = result.errors
    assert error.field == "metadata" and f"at most {MAX_METADATA_BYTES} bytes" in error.rule


# ---- the payload digest


def test_metadata_is_part_of_the_payload_digest_and_absent_metadata_frames_as_before() -> None:
    framed = b"".join(len(p).to_bytes(4, "big") + p for p in [b"payload.v1", b"5", b""])
    assert payload_digest(5, None) == payload_digest(5, None, "") == hashlib.sha256(framed).hexdigest()[:16]
    assert payload_digest(5, None, '{"a":1}') != payload_digest(5, None)
    assert payload_digest(5, None, '{"a":1}') != payload_digest(5, None, '{"a":2}')


def test_a_copy_of_an_event_id_with_other_metadata_is_a_conflict() -> None:
    first = award("ann", "m1", 5, at_ms=10, metadata='{"a":1}')
    applied = apply_award(None, None, first, MEMORY)
    assert isinstance(applied, Applied)
    later = award("ann", "m1", 5, at_ms=20, metadata='{"a":2}')  # a later copy loses: refused
    assert isinstance(apply_award(applied.state, applied.seen, later, MEMORY), Conflict)


# ---- which award's metadata the entry shows


def _fold(awards: list[AwardEvent]) -> PlayerState:
    state: PlayerState | None = None
    seen: dict[str, Seen] = {}
    for a in awards:
        outcome: Outcome = apply_award(state, seen.get(a.event_id), a, MEMORY)
        assert isinstance(outcome, Applied | Replaced), outcome
        state, seen[a.event_id] = outcome.state, outcome.seen
    assert state is not None
    return state


def test_sum_shows_the_newest_award_and_none_when_the_newest_has_none() -> None:
    one = award("ann", "m1", 5, at_ms=10, metadata='{"n":1}')
    two = award("ann", "m2", 3, at_ms=20, metadata='{"n":2}')
    assert _fold([one, two]).metadata == '{"n":2}'
    assert _fold([two, one]).metadata == '{"n":2}'  # order of arrival does not matter
    assert _fold([one, two, award("ann", "m3", 1, at_ms=30)]).metadata == ""


@pytest.mark.parametrize("aggregation", [Aggregation.MAX, Aggregation.MIN])
def test_best_of_shows_the_award_that_reached_the_best(aggregation: Aggregation) -> None:
    sign = 1 if aggregation is Aggregation.MAX else -1
    best = award("ann", "m1", sign * 9, aggregation=aggregation, at_ms=10, metadata='{"best":1}')
    worse = award("ann", "m2", sign * 4, aggregation=aggregation, at_ms=20, metadata='{"worse":1}')
    tie = award("ann", "m3", sign * 9, aggregation=aggregation, at_ms=30, metadata='{"tie":1}')
    state = _fold([best, worse, tie])
    assert (state.total, state.metadata) == (sign * 9, '{"best":1}')  # the oldest holding it
    assert _fold([tie, worse, best]).metadata == '{"best":1}'


def test_a_winning_copy_brings_its_metadata_and_the_holder_changes_with_it() -> None:
    # MAX: "ann" first holds 9 by m1 (accepted late in region b); the earlier copy of m1 from
    # region a wins with 2, so the best is again m2's 5, whose metadata the entry must show.
    kept = award("ann", "m2", 5, aggregation=Aggregation.MAX, at_ms=15, metadata='{"m":2}')
    late = award("ann", "m1", 9, aggregation=Aggregation.MAX, at_ms=20, region="b", metadata='{"m":1}')
    state = _fold([kept, late])
    assert state.metadata == '{"m":1}'
    winner = award("ann", "m1", 2, aggregation=Aggregation.MAX, at_ms=10, region="a", metadata='{"m":"1a"}')
    replaced = _fold([kept, late, winner])
    assert (replaced.total, replaced.metadata) == (5, '{"m":2}')
    assert dict(replaced.notes) == {n[0]: n[1] for n in replaced.notes}
    assert sorted(text for _, text in replaced.notes) == ['{"m":"1a"}', '{"m":2}']


def test_a_winning_copy_of_the_newest_sum_award_replaces_its_metadata() -> None:
    older = award("ann", "m1", 5, at_ms=10, metadata='{"m":1}')
    newest = award("ann", "m2", 3, at_ms=30, region="b", metadata='{"m":"2b"}')
    winner = award("ann", "m2", 3, at_ms=20, region="a")  # the same award sent to region a first
    state = _fold([older, newest, winner])
    assert (state.total, state.metadata) == (8, "")  # the winning copy has none
    assert [text for _, text in state.notes] == ['{"m":1}']


def test_a_winning_copy_accepted_at_the_same_time_does_not_keep_the_lost_copys_metadata() -> None:
    loser = award("ann", "m1", 5, at_ms=10, region="b", metadata='{"m":"b"}')
    winner = award("ann", "m1", 5, at_ms=10, region="a")
    state = _fold([loser, winner])
    assert (state.metadata, state.notes) == ("", ())


def test_notes_stay_bounded_by_the_kept_contributions() -> None:
    awards = [
        award("ann", f"m{i}", i, aggregation=Aggregation.MAX, at_ms=i, metadata=f'{{"i":{i}}}') for i in range(60)
    ]
    state = _fold(awards)
    assert state.metadata == '{"i":59}'
    assert len(state.notes) <= KEPT_CONTRIBUTIONS + 1
    assert {key for key, _ in state.notes} <= {key for key, _ in state.contributions}
    sums = _fold([award("ann", f"m{i}", 1, at_ms=i, metadata=f'{{"i":{i}}}') for i in range(60)])
    assert len(sums.notes) <= len(sums.contributions) <= 4 and sums.metadata == '{"i":59}'


def test_a_state_without_metadata_keeps_none() -> None:
    state = _fold([award("ann", f"m{i}", i) for i in range(1, 20)])
    assert (state.metadata, state.notes) == ("", ())


def test_a_correction_keeps_the_metadata_of_the_entry() -> None:
    state = _fold([award("ann", "m1", 5, at_ms=10, metadata='{"m":1}')])
    record = CorrectionRecord(
        board_id="board", correction_id="c1", user_id="ann", score=42, result_version=2, created_at_ms=5,
        region="local", sort_order="DESC", tie_policy="USER_ID", regions=["local"],
    )  # fmt: skip
    outcome = apply_correction(state, None, record, MEMORY)
    assert isinstance(outcome, Corrected) and (outcome.state.total, outcome.state.metadata) == (42, '{"m":1}')


def test_a_rolling_board_shows_the_award_of_its_tie_order_until_its_day_expires() -> None:
    first = award("ann", "m1", 5, at_ms=10, metadata='{"d":1}')
    applied = apply_rolling(None, None, first, MEMORY, day=1, expired_through=None)
    assert isinstance(applied, Applied) and applied.state.metadata == '{"d":1}'
    second = award("ann", "m2", 1, at_ms=20)
    again = apply_rolling(applied.state, None, second, MEMORY, day=2, expired_through=None)
    assert isinstance(again, Applied) and again.state.metadata == ""
    third = award("ann", "m3", 1, at_ms=30, metadata='{"d":3}')
    last = apply_rolling(again.state, None, third, MEMORY, day=3, expired_through=None)
    assert isinstance(last, Applied) and last.state.metadata == '{"d":3}'
    expired = expire(Aggregation.SUM, last.state, 1)
    assert expired is not None and expired.metadata == '{"d":3}'


def _latest(match: str, score: int, at_ms: int, occurred_ms: int, *, region: str = "local", metadata: str = ""
            ) -> AwardEvent:  # fmt: skip
    a = award("ann", match, score, aggregation=Aggregation.LATEST, at_ms=at_ms, region=region, metadata=metadata)
    return msgspec.structs.replace(a, occurred_at_ms=occurred_ms)


def test_latest_shows_the_latest_award_whatever_arrives_later() -> None:
    newer = _latest("m2", 7, at_ms=10, occurred_ms=2_000, metadata='{"m":2}')
    older = _latest("m1", 9, at_ms=20, occurred_ms=1_000, metadata='{"m":1}')  # happened first, came later
    assert (_fold([newer, older]).total, _fold([newer, older]).metadata) == (7, '{"m":2}')
    assert _fold([older, newer]).metadata == '{"m":2}'
    assert _fold([older, newer, _latest("m3", 1, at_ms=30, occurred_ms=3_000)]).metadata == ""


def test_latest_a_winning_copy_replaces_the_latest_awards_metadata() -> None:
    older = _latest("m1", 9, at_ms=20, occurred_ms=1_000, metadata='{"m":1}')
    newest = _latest("m2", 7, at_ms=30, occurred_ms=2_000, region="b", metadata='{"m":"2b"}')
    winner = _latest("m2", 7, at_ms=25, occurred_ms=2_000, region="a", metadata='{"m":"2a"}')
    state = _fold([older, newest, winner])
    assert (state.total, state.metadata) == (7, '{"m":"2a"}')
    assert sorted(text for _, text in state.notes) == ['{"m":"2a"}', '{"m":1}']
