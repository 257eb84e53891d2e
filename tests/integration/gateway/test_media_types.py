"""Answers as ``application/graphql-response+json`` when a client asks for it (the GraphQL over HTTP
specification's status codes), as ``application/json`` otherwise, on every path an answer takes:
strawberry's executor, a compiled plan and the answer cache."""

from __future__ import annotations

from tests.integration.gateway.conftest import Boards, Gateway

SPEC = {"accept": "application/graphql-response+json, application/json;q=0.9"}
COUNT = "query($id: ID!) { leaderboard(id: $id) { playerCount } }"


async def test_request_errors_are_400_without_data_as_the_specification_type(gateway: Gateway) -> None:
    for document, variables in [
        ("{ leaderboard(id: ", {}),  # does not parse
        ("{ nosuchfield }", {}),  # does not validate
        (COUNT, {"id": {"not": "an id"}}),  # the variable does not coerce
    ]:
        response = await gateway.http.post(gateway.url, json={"query": document, "variables": variables}, headers=SPEC)
        assert response.status_code == 400, (document, response.text)
        assert response.headers["content-type"].startswith("application/graphql-response+json")
        body = response.json()
        assert "data" not in body and body["errors"], body

        legacy = await gateway.http.post(gateway.url, json={"query": document, "variables": variables})
        assert legacy.status_code == 200, (document, legacy.text)
        assert legacy.headers["content-type"].startswith("application/json")
        assert legacy.json()["errors"]


async def test_field_errors_and_answers_are_200_in_the_type_asked_for(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create()
    missing = await gateway.http.post(
        gateway.url, json={"query": "{ leaderboard(id: \"  \") { playerCount } }"}, headers=SPEC
    )
    assert missing.status_code == 200, missing.text  # BAD_USER_INPUT is a field error: data is there
    assert "data" in missing.json() and missing.json()["errors"]

    for _ in range(3):  # the first answer is generic, later ones planned or from the answer cache
        for headers, media_type in [(SPEC, "application/graphql-response+json"), ({}, "application/json")]:
            response = await gateway.http.post(
                gateway.url, json={"query": COUNT, "variables": {"id": board.id}}, headers=headers
            )
            assert response.status_code == 200, response.text
            assert response.headers["content-type"].startswith(media_type), (headers, response.headers)
            assert response.json()["data"] == {"leaderboard": {"playerCount": 0}}
