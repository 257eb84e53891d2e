"""``python -m regions.intake.openapi [--check]``: write (or check) ``schema/intake.openapi.json``, the
intake's OpenAPI document for the default limits (a running intake serves its own limits' at
``/openapi.json``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from regions.core.intake_api import openapi_document
from regions.runtime.settings import IntakeSettings

DOCUMENT_PATH = Path(__file__).resolve().parents[2] / "schema" / "intake.openapi.json"
VERSION = "0.1.0"  # the API's version: changed with the contract, not with each release


def document(intake: IntakeSettings) -> dict[str, Any]:
    return openapi_document(VERSION, intake.max_batch, intake.max_body_bytes)


def text() -> str:
    return json.dumps(document(IntakeSettings()), indent=2, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when the file differs from the code")
    args = parser.parse_args(argv)
    if args.check:
        if not DOCUMENT_PATH.exists() or DOCUMENT_PATH.read_text(encoding="utf-8") != text():
            print(f"{DOCUMENT_PATH} is out of date: run 'python -m regions.intake.openapi'", file=sys.stderr)
            return 1
        return 0
    DOCUMENT_PATH.write_text(text(), encoding="utf-8")
    print(f"wrote {DOCUMENT_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
