"""An award's metadata: its canonical form, and which award's metadata a player's entry shows.

Pure. Metadata is a JSON object a game service attaches to an award (a replay id, a character, a
map); the platform never reads inside it. It is carried as canonical JSON text (compact, keys
sorted), so the same object always has the same text, the same payload digest and the same bytes.
The empty text means none: an award without metadata, or an empty object, adds nothing anywhere.

The rule: an entry shows the metadata of the award whose contribution holds the score. Which award
that is, is the aggregation's to say (``holder_of``); every kept contribution's metadata is kept
beside it (``notes``), so the holder's is known again when a winning copy of an event id replaces
another and the holder changes.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable

from regions.core.boards import Aggregation

MAX_METADATA_BYTES = 512
"""Largest metadata, as its canonical JSON text encoded in UTF-8."""

Note = tuple[str, str]  # (key of an award's contribution, its metadata's canonical text)


def canonical_metadata(value: object) -> str:
    """The canonical text of an award's ``metadata`` (empty for an empty object); ValueError naming
    the rule when it is not a JSON object or its text is over ``MAX_METADATA_BYTES``."""
    if not isinstance(value, dict):
        raise ValueError("must be a JSON object")
    if not value:
        return ""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
    size = len(text.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes as compact JSON, not {size}")
    return text


def holder_of(aggregation: Aggregation, reached: str, kept: Collection[str]) -> str:
    """The key of the contribution (among the ``kept`` ones' keys) that holds a player's score: its
    award's metadata is the entry's. SUM: the newest award applied; MAX/MIN: the oldest award that
    holds the best; both are the award the tie order is reached with (``reached``, which is also
    their contribution's key). LATEST: the latest award, whose contributions are keyed by latest key
    (``regions.core.latest``: the largest key is the latest). A new aggregation says here which of
    its contributions holds its score."""
    if aggregation is Aggregation.LATEST:
        return max(kept)
    return reached


def noted(
    aggregation: Aggregation,
    reached: str,
    kept: Iterable[str],
    before: Iterable[Note],
    added: Note | None = None,
) -> tuple[str, tuple[Note, ...]]:
    """(metadata of the holder, notes) of a new state: ``before`` (the notes of the state it
    replaces) plus ``added`` (the applied award's, when it has metadata), of the awards still among
    the ``kept`` contributions only. Bounded like them: at most one note per kept contribution
    (``regions.core.aggregation.KEPT_NEWEST`` / ``KEPT_CONTRIBUTIONS``, each at most
    ``MAX_METADATA_BYTES``), and none for awards without metadata."""
    # (KEPT_LATEST on a LATEST board)
    keys = set(kept)
    notes: dict[str, str] = dict(before)
    if added is not None and added[1]:
        notes[added[0]] = added[1]
    live = {key: text for key, text in notes.items() if key in keys}
    holder = holder_of(aggregation, reached, keys) if keys else reached
    return live.get(holder, ""), tuple(sorted(live.items()))
