"""The projection's positions hash as values: what it reflects per (accepting region, partition),
its epoch and state, and the hash's fields as the projector writes them and readers parse them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from regions.core.positions import SourceKey, SourcePosition
from schema.redis_keys import LAYOUT_FORMAT, POSITION_DETAILS, position_field


@dataclass(frozen=True, slots=True)
class Positions:
    """What the projection reflects: per (accepting region, partition), the last offset included
    with the times and gaps that go with it. A projection without an epoch (lost) or still
    ``rebuilding`` claims nothing fresh: its reads are stale."""

    epoch: str | None
    marks: dict[SourceKey, SourcePosition]
    newest_accepted_ms: int | None
    rebuilding: bool = False
    sequence_base: int = 0  # added to every board's hint sequence in this epoch (see the projector)
    layout: str = LAYOUT_FORMAT  # the key layout the projection was written in (schema.redis_keys)

    @property
    def offsets(self) -> dict[SourceKey, int]:
        return {key: mark.offset for key, mark in self.marks.items()}


_DETAILS = dict(zip(POSITION_DETAILS, ("accepted_at_ms", "heartbeat_at_ms", "gaps"), strict=True))


def position_fields(marks: Mapping[SourceKey, SourcePosition]) -> list[str | int]:
    """The positions hash's fields and values for ``marks`` (field, value, ...); zero times and
    counts are left out, so a field exists only once something was heard."""
    items: list[str | int] = []
    newest = 0
    for (region, partition), mark in marks.items():
        items += [position_field(region, partition), mark.offset]
        for detail, attribute in _DETAILS.items():
            value = getattr(mark, attribute)
            if value > 0:
                items += [position_field(region, partition, detail), value]
        newest = max(newest, mark.accepted_at_ms)
    if newest:
        items += ["accepted_at", newest]
    return items


def positions_of(raw: Mapping[str, str]) -> Positions:
    """The positions hash's fields as read (HGETALL) as positions."""
    accepted = raw.get("accepted_at")
    return Positions(
        raw.get("epoch"),
        parse_positions(raw),
        int(accepted) if accepted else None,
        raw.get("rebuilding", "0") == "1",
        int(raw.get("sequence_base", "0")),
        raw.get("layout", "1"),
    )


def parse_positions(raw: Mapping[str, str]) -> dict[SourceKey, SourcePosition]:
    """The (region, partition) positions a positions hash holds; other fields are ignored."""
    offsets: dict[SourceKey, int] = {}
    details: dict[SourceKey, dict[str, int]] = {}
    for name, value in raw.items():
        parts = name.split(":")
        if len(parts) == 2 and parts[1].isdigit():
            offsets[(parts[0], int(parts[1]))] = int(value)
        elif len(parts) == 3 and parts[0] in _DETAILS and parts[2].isdigit():
            details.setdefault((parts[1], int(parts[2])), {})[_DETAILS[parts[0]]] = int(value)
    return {key: SourcePosition(offset, **details.get(key, {})) for key, offset in offsets.items()}
