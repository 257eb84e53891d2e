"""``Long``: a 64-bit integer serialized as a JSON number (GraphQL ``Int`` is only 32-bit).
``JSON``: a JSON value carried as its text (an award's metadata) and sent as the value itself."""

from __future__ import annotations

import json
from typing import Any, NewType

import strawberry
from graphql import GraphQLError, IntValueNode, ValueNode

Long = NewType("Long", int)

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def _checked(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GraphQLError(f"Long cannot represent a non-integer value: {value!r}")
    if not LONG_MIN <= value <= LONG_MAX:
        raise GraphQLError(f"Long cannot represent a value outside 64 bits: {value}")
    return value


def _parse_literal(node: ValueNode, _variables: Any = None) -> int:
    if not isinstance(node, IntValueNode):
        raise GraphQLError("Long must be an integer literal", node)
    return _checked(int(node.value))


LONG_SCALAR = strawberry.scalar(
    name="Long",
    description="64-bit integer, exact up to 2^53, serialized as a JSON number (GraphQL Int is only 32-bit).",
    serialize=_checked,
    parse_value=_checked,
    parse_literal=_parse_literal,
)

JSON = NewType("JSON", str)  # the value's JSON text: it is decoded only as the response is written


def _json_value(text: str) -> Any:
    return json.loads(text)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


JSON_SCALAR = strawberry.scalar(
    name="JSON",
    description="Any JSON value, as it was sent (an award's metadata is a JSON object).",
    serialize=_json_value,
    parse_value=_json_text,
)
