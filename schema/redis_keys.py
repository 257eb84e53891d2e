"""Redis key layout of the ranking projection.

All keys of one board share the hash tag ``{<prefix>:<board>}`` so a board lives in one Redis
Cluster slot and its scripts run atomically there. The projection's positions (asOf) live in one
hash of their own; readers read it before a board's keys, so a response never claims more than it
holds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BoardKeys:
    ranking: str
    records: str
    sequence: str


def board_keys(prefix: str, board_id: str, generation: str = "") -> BoardKeys:
    """Keys of one board's projection; a non-empty ``generation`` names a rebuild's fresh keys."""
    tag = f"{prefix}:{{{prefix}:{board_id}}}"
    suffix = f":{generation}" if generation else ""
    return BoardKeys(ranking=f"{tag}:rank{suffix}", records=f"{tag}:rec{suffix}", sequence=f"{tag}:seq")


def positions_key(prefix: str) -> str:
    """The projection's asOf positions and epoch."""
    return f"{prefix}:{{{prefix}:positions}}"


def hints_channel(prefix: str, board_id: str) -> str:
    """Pub/sub channel of one board's change hints."""
    return f"{prefix}:hints:{board_id}"
