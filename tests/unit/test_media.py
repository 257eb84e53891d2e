from __future__ import annotations

import pytest

from gateway.core.media import GRAPHQL_RESPONSE, JSON, is_request_error, response_media_type


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        ("application/*", JSON),
        ("application/json", JSON),
        ("application/graphql-response+json", GRAPHQL_RESPONSE),
        ("Application/GraphQL-Response+JSON", GRAPHQL_RESPONSE),
        ("application/graphql-response+json, application/json;q=0.9", GRAPHQL_RESPONSE),
        ("application/graphql-response+json;q=0.5, application/json", JSON),
        ("application/json, application/graphql-response+json", GRAPHQL_RESPONSE),
        ("application/graphql-response+json;q=0.8, */*;q=0.5", GRAPHQL_RESPONSE),
        ("application/graphql-response+json;q=0.3, */*", JSON),
        ("application/graphql-response+json;q=0", JSON),
        ("application/graphql-response+json;q=oops", JSON),
        ("text/html", JSON),
    ],
)
def test_the_answer_is_the_specification_type_only_when_the_client_prefers_it(
    accept: str | None, expected: str
) -> None:
    assert response_media_type(accept) == expected


def test_a_request_error_has_no_data_and_no_field_error() -> None:
    assert is_request_error(None, [None])
    assert is_request_error(None, [None, None])
    assert not is_request_error(None, [["leaderboard"]])  # a field error that nulled the root
    assert not is_request_error(None, [None, ["leaderboard"]])
    assert not is_request_error({"leaderboard": None}, [None])
    assert not is_request_error(None, [])
