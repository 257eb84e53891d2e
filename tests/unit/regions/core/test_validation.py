from regions.core.boards import Aggregation, Board
from regions.core.validation import (
    AwardInput,
    BatchTooLarge,
    FieldError,
    Invalid,
    Parsed,
    check_against_board,
    parse_request,
)

GOOD = {"matchId": "m1", "leaderboardId": "weekly", "userId": "alice", "awardType": "kill", "delta": 5}


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
    neither = parse_request({k: v for k, v in GOOD.items() if k != "delta"}, max_batch=1)
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
