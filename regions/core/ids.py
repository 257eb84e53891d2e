"""Rules for identifiers that come from outside (intake, GraphQL, the command line). Pure.

Every edge checks ids with these functions, so an id that one door refuses is refused by all of
them. Each returns None for a valid id, or the rule it breaks, phrased to follow the field's name.
"""

from __future__ import annotations

import re

BOARD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
MAX_USER_ID = 128
MAX_MATCH_ID = 128
MAX_AWARD_TYPE = 64


def text_error(value: str, limit: int) -> str | None:
    """The rule a free-text id breaks: 1..``limit`` printable characters, not only white space."""
    if not 1 <= len(value) <= limit:
        return f"must be 1..{limit} characters, got {len(value)}"
    if not value.isprintable():
        return "must contain printable characters only"
    if not value.strip():
        return "must not be only white space"
    return None


def user_id_error(value: str) -> str | None:
    return text_error(value, MAX_USER_ID)


def board_id_error(value: str) -> str | None:
    if BOARD_ID.fullmatch(value):  # not match: its $ would let a trailing newline through
        return None
    return "must be 1..128 of letters, digits and . _ : -, starting with a letter or digit"
