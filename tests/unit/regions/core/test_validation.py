import jsonschema_rs
import pytest

from regions.core.boards import Aggregation, Board, InvalidBoardError
from regions.core.intake_api import award_schema
from regions.core.validation import (
    AwardInput,
    BatchTooLarge,
    FieldError,
    Invalid,
    Parsed,
    check_against_board,
    parse_request,
    rfc3339_ms,
)

GOOD = {"matchId": "m1", "leaderboardId": "weekly", "userId": "alice", "awardType": "kill", "delta": 5}
NO_DELTA = {k: v for k, v in GOOD.items() if k != "delta"}


def test_single_award_parses_to_core_value() -> None:
    result = parse_request({**GOOD, "occurredAt": "2026-01-31T12:00:00Z"}, max_batch=10)
    assert isinstance(result, Parsed)
    assert result.awards == (AwardInput("weekly", "m1", "alice", "kill", 5, None, 1769860800000),)


def test_every_bad_field_is_named_with_its_rule() -> None:
    bad = {
        "matchId": "",
        "leaderboardId": 7,
        "userId": "x" * 129,
        "awardType": "k\n",
        "delta": 1.5,
        "occurredAt": "yesterday",
        "extra": 1,
    }
    result = parse_request(bad, max_batch=10)
    assert isinstance(result, Invalid)
    fields = {e.field for e in result.errors}
    assert fields == {"matchId", "leaderboardId", "userId", "awardType", "delta", "occurredAt", "extra"}
    assert all(e.rule for e in result.errors)


def test_batch_errors_carry_the_index() -> None:
    result = parse_request({"awards": [GOOD, {**GOOD, "delta": True}]}, max_batch=10)
    assert result == Invalid((FieldError("awards[1].delta", "must be an integer"),))


def test_batch_over_the_limit_is_too_large() -> None:
    assert parse_request({"awards": [GOOD] * 3}, max_batch=2) == BatchTooLarge(3, 2)


def test_empty_batch_is_invalid() -> None:
    assert parse_request({"awards": []}, max_batch=2) == Invalid(
        (FieldError("awards", "must be a non-empty array of awards"),)
    )


def test_amount_outside_exact_range_is_refused() -> None:
    result = parse_request({**GOOD, "delta": 2**53}, max_batch=1)
    assert isinstance(result, Invalid) and result.errors[0].field == "delta"


def test_both_or_neither_amount_is_refused() -> None:
    both = parse_request({**GOOD, "score": 3}, max_batch=1)
    neither = parse_request(NO_DELTA, max_batch=1)
    assert isinstance(both, Invalid) and isinstance(neither, Invalid)


def test_time_without_zone_is_refused() -> None:
    result = parse_request({**GOOD, "occurredAt": "2026-01-31T12:00:00"}, max_batch=1)
    assert isinstance(result, Invalid) and result.errors[0].field == "occurredAt"


def test_best_of_board_wants_score_not_delta() -> None:
    board = Board("best", "Best", "eu", aggregation=Aggregation.MAX)
    award = AwardInput("best", "m", "u", "t", 5, None, None)
    assert [e.field for e in check_against_board(award, board, "awards[0].")] == ["awards[0].delta"]
    assert check_against_board(AwardInput("best", "m", "u", "t", None, 5, None), board) == []


def test_non_object_body_is_named() -> None:
    assert parse_request([1, 2], max_batch=5) == Invalid((FieldError("body", "must be a JSON object"),))


@pytest.mark.parametrize(
    ("field", "value"),
    [("userId", "   "), ("userId", "\u2003\u00a0"), ("matchId", "\t"), ("awardType", " "),
     ("userId", "a\u0000b"), ("leaderboardId", " weekly"), ("leaderboardId", "weekly\n")],
)  # fmt: skip
def test_ids_of_white_space_or_control_characters_are_refused(field: str, value: str) -> None:
    result = parse_request({**GOOD, field: value}, max_batch=1)
    assert isinstance(result, Invalid) and [e.field for e in result.errors] == [field]


def test_zero_delta_is_refused_and_zero_score_is_not() -> None:
    zero = parse_request({**GOOD, "delta": 0}, max_batch=1)
    assert zero == Invalid((FieldError("delta", "must not be 0: an award changes the total"),))
    assert isinstance(parse_request({**NO_DELTA, "score": 0}, max_batch=1), Parsed)


def test_null_delta_is_named_as_delta() -> None:
    result = parse_request({**GOOD, "delta": None}, max_batch=1)
    assert result == Invalid((FieldError("delta", "must be an integer, not null"),))


def test_negative_delta_only_on_a_board_that_allows_it() -> None:
    award = AwardInput("weekly", "m", "u", "t", -5, None, None)
    refused = check_against_board(award, Board("weekly", "Weekly", "eu"))
    allowed = check_against_board(award, Board("weekly", "Weekly", "eu", allow_negative=True))
    assert [e.field for e in refused] == ["delta"] and "negative" in refused[0].rule
    assert allowed == []


def test_only_sum_boards_may_allow_negative_deltas() -> None:
    with pytest.raises(InvalidBoardError, match="allow_negative"):
        Board("best", "Best", "eu", aggregation=Aggregation.MAX, allow_negative=True)


def test_a_board_with_a_time_window_needs_the_event_time() -> None:
    board = Board("daily", "Daily", "eu", window="daily;tz=Europe/Stockholm")
    without = AwardInput("daily", "m", "u", "t", 5, None, None)
    with_time = AwardInput("daily", "m", "u", "t", 5, None, 1_764_500_000_000)
    refused = check_against_board(without, board, "awards[2].")
    assert [(e.field, "required" in e.rule) for e in refused] == [("awards[2].occurredAt", True)]
    assert check_against_board(with_time, board) == []
    assert check_against_board(without, Board("all-time", "All time", "eu")) == []


def test_a_latest_board_takes_a_score_and_refuses_a_delta_naming_the_rule() -> None:
    board = Board("last", "Last", "eu", aggregation=Aggregation.LATEST)
    refused = check_against_board(AwardInput("last", "m", "u", "t", 5, None, None), board, "awards[1].")
    assert refused == [FieldError("awards[1].delta", "board last is LATEST: send score instead")]
    assert check_against_board(AwardInput("last", "m", "u", "t", None, -5, None), board) == []
    with pytest.raises(InvalidBoardError, match="only SUM boards take deltas; a LATEST board"):
        Board("last", "Last", "eu", aggregation=Aggregation.LATEST, allow_negative=True)


def test_an_integer_may_be_written_with_a_fraction_or_an_exponent() -> None:
    """JSON Schema's integer, as the intake's document says: 5.0 and 5e0 are the number 5."""
    [delta] = parse_request({"awards": [{**GOOD, "delta": 5.0}]}, max_batch=1).awards  # type: ignore[union-attr]
    [score] = parse_request({**NO_DELTA, "score": -1e3}, max_batch=1).awards  # type: ignore[union-attr]
    assert (delta.delta, score.score) == (5, -1000) and isinstance(delta.delta, int)
    assert parse_request({**GOOD, "delta": 5.5}, max_batch=1) == Invalid(
        (FieldError("delta", "must be an integer"),)
    )
    over = parse_request({**GOOD, "delta": 2.0**53}, max_batch=1)
    assert over == Invalid((FieldError("delta", "must be an exact integer with |value| < 2^53"),))


DOCUMENTED_TIME = jsonschema_rs.validator_for(
    award_schema()["properties"]["occurredAt"], validate_formats=True
)


@pytest.mark.parametrize(
    "text",
    ["2026-01-31T12:00:00Z", "2026-01-31t12:00:00z", "2026-01-31T12:00:00.123456789+01:00", "2026-01-31T12:00:00-00:00",
     "2026-06-30T23:59:60Z", "2026-06-30T18:59:60-05:00", "0000-02-29T00:00:00Z", "9999-12-31T23:59:59-05:00",
     "2026-01-31T12:00Z", "20260131T120000Z", "2026-01-31 12:00:00Z", "2026-01-31T12:00:00,5Z", "2026-W05-6T12:00:00Z",
     "2026-01-31T12:00:00+0100", "2026-01-31T12Z", "2026-01-31T12:00:00.Z", "2026-01-31T12:34:60Z", "2026-02-30T00:00:00Z",
     "2026-01-31T24:00:00Z", "2026-01-31T12:00:00+24:00", "2026-01-31T12:00:00+01:60", "\u0662\u0660\u0662\u0666-01-31T12:00:00Z",
     "2026-01-31T12:00:00"],
)  # fmt: skip
def test_occurred_at_is_read_exactly_as_the_document_s_date_time(text: str) -> None:
    result = parse_request({**GOOD, "occurredAt": text}, max_batch=1)
    assert isinstance(result, Parsed) == DOCUMENTED_TIME.is_valid(text), result


def test_a_date_time_s_instant_whatever_its_spelling() -> None:
    assert rfc3339_ms("2026-01-31t12:00:00.5z") == rfc3339_ms("2026-01-31T13:00:00.5+01:00") == 1769860800500
    assert rfc3339_ms("2024-12-31T23:59:60Z") == rfc3339_ms("2025-01-01T00:00:00Z")  # a leap second
    year_400 = rfc3339_ms("0400-03-01T00:00:00Z")
    assert year_400 is not None and rfc3339_ms("0000-03-01T00:00:00Z") == year_400 - 146_097 * 86_400_000
    assert rfc3339_ms("2026-01-31T12:00:00") is None
