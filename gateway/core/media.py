"""Which media type a GraphQL answer over HTTP is sent as, from the request's ``Accept`` header, as
the GraphQL over HTTP specification says.

``application/graphql-response+json`` is the specification's own type: a client that names it (at
least as high as ``application/json``) gets it, and with it status codes that tell a request error
(the document does not parse or validate, the variables do not coerce: 400, no ``data`` entry) from
a field error (200). ``application/json`` is the legacy type: every well-formed request is answered
200, errors in the body, as GraphQL servers always did. A client that names neither, or only
wildcards, gets the legacy type, which every existing client understands.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"


def _accepted(accept: str) -> dict[str, float]:
    """Each media range of an ``Accept`` header with its quality (1 unless ``q`` says otherwise;
    a ``q`` that does not parse counts as 0, which is refusal)."""
    ranges: dict[str, float] = {}
    for part in accept.split(","):
        name, *params = (p.strip() for p in part.split(";"))
        if not name:
            continue
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = min(1.0, max(0.0, float(value)))
                except ValueError:
                    quality = 0.0
        ranges[name.lower()] = max(quality, ranges.get(name.lower(), 0.0))
    return ranges


def response_media_type(accept: str | None) -> str:
    """The type of the answer: ``GRAPHQL_RESPONSE`` when the client names it with a quality at least
    that of ``application/json`` (named or through a wildcard), else ``JSON``."""
    ranges = _accepted(accept or "")
    wanted = ranges.get(GRAPHQL_RESPONSE, 0.0)
    legacy = ranges.get(JSON, max(ranges.get("application/*", 0.0), ranges.get("*/*", 0.0)))
    return GRAPHQL_RESPONSE if wanted > 0 and wanted >= legacy else JSON


def is_request_error(data: object, error_paths: Sequence[object]) -> bool:
    """Whether an answer is a request error: no data, and no error of a field (an error raised in
    a field has a path; a document that does not parse or validate, or variables that do not
    coerce, yield errors without one and nothing is executed)."""
    return data is None and bool(error_paths) and all(path is None for path in error_paths)
