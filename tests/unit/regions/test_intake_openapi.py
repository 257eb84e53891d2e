"""The intake's OpenAPI document: checked in and current, and it names every refusal the intake
answers with the status the intake gives it."""

from __future__ import annotations

import ast
from pathlib import Path

from regions.core.intake_api import REFUSALS, award_schema
from regions.core.signing import AuthFailure, Denied
from regions.core.validation import AWARD_FIELDS
from regions.intake import app
from regions.intake.openapi import DOCUMENT_PATH, document, main, text
from regions.runtime.settings import IntakeSettings


def test_the_checked_in_document_is_the_code_s() -> None:
    assert DOCUMENT_PATH.read_text(encoding="utf-8") == text(), (
        "schema/intake.openapi.json is out of date: run 'python -m regions.intake.openapi'"
    )
    assert main(["--check"]) == 0


def test_every_refusal_the_intake_raises_is_documented_with_its_status() -> None:
    raised = set()
    for node in ast.walk(ast.parse(Path(app.__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Rejection":
            status, code = node.args[0], node.args[1]
            if isinstance(code, ast.Constant):
                assert isinstance(status, ast.Constant), ast.dump(node)
                raised.add((code.value, status.value))
    assert len(raised) >= 12  # the walk found the intake's refusals
    assert {(code, REFUSALS[code].status) for code, _ in raised} == raised
    assert {(f"auth_{r}", REFUSALS[f"auth_{r}"].status) for r in AuthFailure} == {
        (f"auth_{r}", Denied(r, "").status) for r in AuthFailure
    }


def test_the_document_describes_every_award_field_and_status() -> None:
    doc = document(IntakeSettings(max_batch=7))
    post = doc["paths"]["/internal/awards"]["post"]
    assert set(award_schema()["properties"]) == AWARD_FIELDS
    assert {str(r.status) for r in REFUSALS.values()} | {"202"} == set(post["responses"])
    batch = post["requestBody"]["content"]["application/json"]["schema"]["oneOf"][1]
    assert batch["properties"]["awards"]["maxItems"] == 7
    codes_429 = post["responses"]["429"]["content"]["application/json"]["schema"]["properties"]["error"]
    assert codes_429["properties"]["code"]["enum"] == ["rate_limited"]
    assert "Retry-After" in post["responses"]["429"]["headers"]
