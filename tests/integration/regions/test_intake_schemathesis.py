"""The running intake against its own OpenAPI document, by Schemathesis: requests generated from the
document it serves, valid ones and invalid ones, go to a real intake process with this region's
processor and projector behind it (``?wait=applied`` reads the projection; on a Redis Cluster with
``--redis-url``). Every answer must be one the document describes (status, body, headers) and none a
server error; every invalid request must be refused with a documented 4xx and its refusal body (as
Schemathesis judges invalid: a query parameter the document does not name is not, and the intake
leaves it alone); a valid one is accepted unless it breaks a rule the document states in words only.

Each request is signed as it is sent: its body is serialized here and those bytes are signed. A case
generated without a signature header (an invalid one) goes with its headers as generated. Valid awards
go to boards this test creates, so they are accepted into Kafka and projected there.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as run_settings
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    missing_required_header,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from regions.core.boards import Aggregation, Board
from regions.core.ids import board_id_error
from regions.core.intake_api import REFUSALS
from regions.intake.client import signature_headers
from regions.runtime.settings.intake import DEV_AWARD_KEY_ID, DEV_AWARD_SECRET
from tests.conftest import RegionFactory
from tests.harness import Region, points

MAX_BATCH = 4  # the running intake's limit (its document says so): larger batches are generated too
EXAMPLES = 200  # cases of POST /internal/awards per generation mode
REFUSED = sorted({str(r.status) for r in REFUSALS.values() if r.status < 500})
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, negative_data_rejection, missing_required_header]  # fmt: skip
CONFIG = {"checks": {"negative_data_rejection": {"expected-statuses": REFUSED}}}
# Rules the document states in words, which no JSON Schema keyword can say (by field, a word of the
# rule): an id's characters printable, metadata's encoded size, occurredAt's distance ahead of the
# intake's clock, timeoutMs only with wait. A valid case may be refused for these and nothing else.
IN_WORDS_ONLY = {"userId": "printable", "matchId": "printable", "awardType": "printable",
                 "metadata": "bytes", "occurredAt": "clock", "timeoutMs": "only with wait"}  # fmt: skip


async def _region(region_factory: RegionFactory) -> tuple[Region, dict[str, str]]:
    """An intake with this test's batch limit, a processor and a projector; the test's boards by the
    amount they take (a SUM board that allows negative deltas, a MAX board)."""
    region = await region_factory(services=("processor", "projector"))
    await region.start("intake", overrides={"LB_INTAKE__MAX_BATCH": str(MAX_BATCH)})
    tag = uuid.uuid4().hex[:8]
    boards = {
        "delta": Board(f"st-sum-{tag}", "Sums", region.settings.region, allow_negative=True),
        "score": Board(f"st-max-{tag}", "Bests", region.settings.region, aggregation=Aggregation.MAX),
    }
    for board in boards.values():
        await region.create_board(board)
    # Once an award is projected every process is past its start: waits answer as soon as projected.
    assert (await region.client.send(points(boards["delta"].id, "warm", "warm-up", 1))).status_code == 202
    await region.wait_for_total(boards["delta"].id, "warm-up", 1)
    return region, {amount: board.id for amount, board in boards.items()}


def _retarget(case: Case[Any], boards: dict[str, str]) -> Case[Any]:
    """Each award with a valid leaderboardId goes to the test's board that takes its amount. A valid id
    for another leaves the case as valid or invalid as it was (Schemathesis judges the changed body
    again); invalid ids stay as generated."""
    body: Any = case.body
    awards = body.get("awards") if isinstance(body, dict) and "awards" in body else [body]
    for award in awards if isinstance(awards, list) else []:
        board = award.get("leaderboardId") if isinstance(award, dict) else None
        if isinstance(board, str) and board_id_error(board) is None:
            award["leaderboardId"] = boards["score" if "score" in award else "delta"]
    return case


def _request(case: Case[Any], base_url: str) -> httpx.Request:
    """The case as it goes on the wire: the body serialized here and these bytes signed, unless the
    case's headers were generated invalid (a signature header left out): then they go as generated."""
    sent = case.as_transport_kwargs(base_url=base_url)
    body = json.dumps(sent["json"]).encode() if "json" in sent else sent.get("data", b"")
    headers = httpx.Headers(sent["headers"])
    generated = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
    if generated is None or generated.mode.is_positive:  # the signature replaces the headers generated
        headers.update(signature_headers(DEV_AWARD_KEY_ID, DEV_AWARD_SECRET, body))
    return httpx.Request(sent["method"], sent["url"], params=sent["params"], headers=headers, content=body)


def _unexplained(response: httpx.Response) -> list[dict[str, str]]:
    """The fields a refusal of a valid case names for other rules than those stated in words only."""
    error = response.json()["error"]
    if response.status_code != 400 or error["code"] not in ("invalid_field", "invalid_parameter"):
        return [{"field": "(answer)", "rule": f"{response.status_code} {error['code']}"}]
    return [
        f for f in error["fields"]
        if IN_WORDS_ONLY.get(f["field"].rpartition(".")[2], "\0") not in f["rule"]
    ]  # fmt: skip


def _run(
    operation: APIOperation[Any, Any, Any, Any],
    mode: GenerationMode,
    examples: int,
    base_url: str,
    boards: dict[str, str],
) -> Counter[tuple[str, int]]:
    """Send ``examples`` cases of ``operation`` generated in ``mode``, each answer checked; the answers
    by the case's kind (valid or invalid, as Schemathesis judges it) and status."""
    answers: Counter[tuple[str, int]] = Counter()
    strategy = operation.as_strategy(generation_mode=mode).map(lambda case: _retarget(case, boards))

    # A fixed sequence of cases (derandomize): the same requests on every run.
    @run_settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
    @given(case=strategy)
    def send(case: Case[Any]) -> None:
        request = _request(case, base_url)
        response = http.send(request)
        case.validate_response(response, checks=CHECKS, headers=dict(request.headers))
        kind = "valid" if case.meta is None or case.meta.generation.mode.is_positive else "invalid"
        if operation.method.upper() == "POST" and kind == "valid" and response.status_code != 202:
            assert _unexplained(response) == [], (request.url, request.content[:2000], response.text)
        answers[(kind, response.status_code)] += 1

    with httpx.Client(timeout=10) as http:
        send()
    return answers


async def test_every_generated_request_gets_an_answer_its_document_describes(
    region_factory: RegionFactory,
) -> None:
    region, boards = await _region(region_factory)
    async with httpx.AsyncClient() as http:
        served = (await http.get(f"{region.intake_url}/openapi.json")).json()
    schema = schemathesis.openapi.from_dict(served, config=schemathesis.Config.from_dict(CONFIG))
    post = schema["/internal/awards"]["POST"]
    batch = served["paths"]["/internal/awards"]["post"]["requestBody"]["content"]["application/json"]
    assert batch["schema"]["oneOf"][1]["properties"]["awards"]["maxItems"] == MAX_BATCH  # this intake's

    answers: Counter[tuple[str, int]] = Counter()
    target = (region.intake_url, boards)
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        answers += await asyncio.to_thread(_run, post, mode, EXAMPLES, *target)
    for path in (path for path, methods in served["paths"].items() if "get" in methods):  # health, docs
        answers += await asyncio.to_thread(_run, schema[path]["GET"], GenerationMode.POSITIVE, 3, *target)

    print(sorted(answers.items()))
    assert answers[("valid", 202)] >= EXAMPLES // 10  # valid awards reached Kafka, not only refusals
    assert {status for kind, status in answers if kind == "invalid"} >= {400, 401}  # bodies, queries, headers
