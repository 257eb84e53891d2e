"""What the audit sink may already have written, told by its committed offsets. Pure.

Audit rows are plain writes, idempotent by the event id (a rewrite of the same applied award is
byte-identical), so a batch written twice still leaves one row per award; what a second write must
not do is count the row as new. Before the sink writes the rows of a batch it commits, per
partition, the offset it has finished (everything before it is written) together with the offset
its batch reaches, as the commit's metadata. A sink that starts after another one stopped without
committing its last batch reads both, and checks the rows of records between them before writing:
those it finds were written already. Records at or after the second offset were never read by
anyone, so their rows are written without a check.
"""

from __future__ import annotations

INTENT_PREFIX = "audit:writing-before="


def intent_metadata(before: int) -> str:
    """The commit metadata saying: rows of records before offset ``before`` may be written."""
    return f"{INTENT_PREFIX}{before}"


def unsure_before(committed: int, metadata: str) -> int:
    """The offset before which records, from ``committed`` on, may already have their row: the
    intent of the last commit, or ``committed`` itself when the commit names none (nothing was
    being written, or it was made by a sink that did not say)."""
    if not metadata.startswith(INTENT_PREFIX):
        return committed
    try:
        before = int(metadata.removeprefix(INTENT_PREFIX))
    except ValueError:
        return committed
    return max(committed, before)
