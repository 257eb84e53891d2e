"""Redis key layout of the ranking projection.

All keys of one board share the hash tag ``{<prefix>:<board>}`` so a board lives in one Redis
Cluster slot and its scripts run atomically there. The projection's positions (asOf) live in one
hash of their own; readers read it before a board's keys, so a response never claims more than it
holds. The projector's own control keys (its lease and the rebuild in progress) share one tag.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BoardKeys:
    ranking: str
    records: str
    sequence: str


def board_keys(prefix: str, board_id: str, generation: str = "") -> BoardKeys:
    """Keys of one board's projection; a non-empty ``generation`` names a rebuild's fresh keys.

    The hint sequence has no generation: it belongs to the live board and survives every swap.
    """
    tag = f"{prefix}:{{{prefix}:{board_id}}}"
    suffix = f":{generation}" if generation else ""
    return BoardKeys(ranking=f"{tag}:rank{suffix}", records=f"{tag}:rec{suffix}", sequence=f"{tag}:seq")


def positions_key(prefix: str) -> str:
    """The projection's asOf positions and epoch (one hash, fields below)."""
    return f"{prefix}:{{{prefix}:positions}}"


POSITION_DETAILS = ("accepted_at", "heartbeat_at", "gaps")
"""What the positions hash holds per (region, partition) besides the offset, each under the field
``<detail>:<region>:<partition>``: the newest acceptance time and heartbeat time (ms) reflected,
and the replication gaps reported there. The offset itself is the field ``<region>:<partition>``.
Every field only moves forward; ``accepted_at`` alone is the newest acceptance time of all."""


def position_field(region: str, partition: int, detail: str = "") -> str:
    """Field of the positions hash for one (accepting region, partition): its offset in that
    region's awards topic, or with ``detail`` one of :data:`POSITION_DETAILS`."""
    return f"{detail}:{region}:{partition}" if detail else f"{region}:{partition}"


def lease_key(prefix: str) -> str:
    """Who may write the projection now: the running projector, or ``ops/lb rebuild`` without one."""
    return f"{prefix}:{{{prefix}:projector}}:lease"


def rebuild_key(prefix: str) -> str:
    """The rebuild asked for or in progress, with its progress (one hash)."""
    return f"{prefix}:{{{prefix}:projector}}:rebuild"


def hints_channel(prefix: str, board_id: str) -> str:
    """Pub/sub channel of one board's change hints."""
    return f"{prefix}:hints:{board_id}"


def cutoffs_key(prefix: str, board_id: str) -> str:
    """The close cutoffs the board's projection has reached: ``<region>:<partition>`` -> offset. Shares
    the board's hash tag: the projector records them in the step that applies the totals before them."""
    return f"{prefix}:{{{prefix}:{board_id}}}:cutoffs"


def announced_key(prefix: str) -> str:
    """What the region's lifecycle worker last told subscribers of each board: board -> its status
    and result version (``regions.core.lifecycle.announced_state``)."""
    return f"{prefix}:{{{prefix}:lifecycle}}:announced"
