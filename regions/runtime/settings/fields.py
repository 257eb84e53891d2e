"""Field types more than one section declares: the same meaning, bounds and description once."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

HealthPort = Annotated[int, Field(description="Port of /healthz, /readyz and /metrics.")]
"""A worker's port of /healthz, /readyz and /metrics (each section gives its own default)."""

ListenHost = Annotated[str, Field(description="Listen address.")]
"""Where a server (the intake, the gateway) listens."""

Workers = Annotated[int, Field(ge=1, le=64)]
"""Processes of one server sharing its port (SO_REUSEPORT); each section says what they share."""

Niceness = Annotated[
    int,
    Field(
        ge=0,
        le=19,
        description="CPU niceness the process adds to itself (0: the same priority as the rest). On a host whose "
        "CPU is shared, a process with more waits for the others under a peak and catches up after it (nothing "
        "is lost): the audit sink's default is 10. Folding, projection and replication default to 0: they are "
        "what freshness waits for, and behind the intake they let it grow to seconds at a peak.",
    ),
]
"""How much a worker lowers its own CPU priority (``regions.runtime.worker.lower_priority``)."""

UnknownBoards = Annotated[
    int,
    Field(ge=1, description="Unknown board ids remembered (the least recently asked is forgotten first)."),
]
"""Bound of a board cache's unknown ids (``regions.core.board_cache``)."""
