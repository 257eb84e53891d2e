"""A GraphQL request over HTTP read the way strawberry reads it, for the planned fast path.

Only the plain cases are read here: a GET with ``query``/``variables``/``operationName``/``extensions``
parameters, or a POST of one JSON object. Anything else (a batch, a stream, a body that is not a JSON
object, a field of the wrong type) is None and goes to strawberry, which answers it as it always did.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

STREAMING = ("multipart/mixed", "text/event-stream")


@dataclass(frozen=True, slots=True)
class Operation:
    query: str | None
    variables: dict[str, Any] | None
    operation_name: str | None
    extensions: dict[str, Any] | None


def _json(text: str | None) -> object:
    return None if not text else msgspec.json.decode(text)


def read_operation(
    method: str, params: Mapping[str, str], headers: Mapping[str, str], body: bytes
) -> Operation | None:
    """The request's operation, or None when strawberry must read the request itself."""
    if any(kind in headers.get("accept", "") for kind in STREAMING):
        return None
    try:
        if method == "GET":
            data: object = {
                "query": params.get("query"),
                "variables": _json(params.get("variables")),
                "operationName": params.get("operationName"),
                "extensions": _json(params.get("extensions")),
            }
        elif "application/json" in headers.get("content-type", ""):
            data = msgspec.json.decode(body)
        else:
            return None
    except msgspec.DecodeError:
        return None
    if not isinstance(data, dict):
        return None
    query, variables = data.get("query"), data.get("variables")
    name, extensions = data.get("operationName"), data.get("extensions")
    if not isinstance(query, str | None) or not isinstance(name, str | None):
        return None
    if not isinstance(variables, dict | None) or not isinstance(extensions, dict | None):
        return None
    return Operation(query, variables, name, extensions)
