"""Redis key layout of the ranking projection.

A board is laid out in one or more shards (``Layout``: a generation and a shard count). Every key of
one shard shares a hash tag (``{<prefix>:<board>}`` for shard 0 and the board's own keys,
``{<prefix>:<board>#<shard>}`` for the others), so a shard lives in one Redis Cluster slot and its
scripts run atomically there, while a board's shards spread over a cluster's masters. A shard is
a sorted set (the ranking) and up to 65,536 small hashes of version records; a rebuild or a reshard
writes a fresh generation of keys and switches the board's layout pointer to it in one step.

The projection's positions (asOf) live in one hash of their own; readers read it before a board's
keys, so a response never claims more than it holds. Every board's live layout is named in a hash
of the same slot (``layouts_key``), so on a Redis Cluster the loss of any other master is noticed:
a shard whose state key is gone while the layouts hash still names it lost its keys (its master
restarted empty), and a board the layouts hash names has a layout wherever its own keys went. The
projector's own control keys (its lease, the rebuild in progress, the layouts left to delete)
share one tag.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

LAYOUT_FORMAT = "3"
"""The key layout this release writes, recorded in the positions hash (field ``layout``). A
projection recorded without it, or with another, holds an earlier layout, which the projector
replaces by a rebuild (format 2 named each board's layout only under the board's own tag)."""

BUCKET_DIGITS = 4
"""A player's version record lives in one of 16^4 = 65,536 small hashes of its shard, chosen by the
first hex digits of the SHA-1 of the user id. Python (:func:`bucket_of`) and the Lua scripts
(``redis.sha1hex``) compute it alike; small hashes stay listpack-encoded in Redis, which keeps a
record at about 15 bytes (see ``LISTPACK_ENTRIES``)."""

LISTPACK_ENTRIES = 1024
LISTPACK_VALUE = 128
"""The least ``hash-max-listpack-entries`` and ``hash-max-listpack-value`` the projection needs to
keep its version buckets compact: 1024 entries hold about 60 million players per shard (a bucket
holds about players / 65,536), 128 bytes any user id. Smaller settings still work, with buckets
that outgrow them taking about five times the memory."""


def _digest(user_id: str) -> str:
    return hashlib.sha1(user_id.encode()).hexdigest()


def bucket_of(user_id: str) -> str:
    """The version bucket of a player (4 hex digits), as the Lua scripts compute it."""
    return _digest(user_id)[:BUCKET_DIGITS]


def shard_of(user_id: str, shards: int) -> int:
    """The shard (0 .. shards-1) of a player on a board of ``shards`` shards: stable, and independent
    of the bucket (other digits of the same hash)."""
    return 0 if shards == 1 else int(_digest(user_id)[BUCKET_DIGITS : BUCKET_DIGITS + 12], 16) % shards


def board_tag(prefix: str, board_id: str) -> str:
    """The start of every key of a board's own hash tag (shard 0 and the board's other keys)."""
    return f"{prefix}:{{{prefix}:{board_id}}}"


def shard_tag(prefix: str, board_id: str, shard: int) -> str:
    """The start of every key of one shard. Shard 0 shares the board's tag; the others have tags of
    their own (``#`` is not allowed in board ids), so a cluster spreads a board's shards."""
    return board_tag(prefix, board_id) if shard == 0 else f"{prefix}:{{{prefix}:{board_id}#{shard}}}"


@dataclass(frozen=True, slots=True)
class BoardKeys:
    """A board's keys that do not depend on its layout, all under the board's tag."""

    sequence: str  # the hint sequence: survives every rebuild and reshard
    layout: str  # hash: "generation", "shards" of the live layout, a copy of ``layouts_key``'s
    # (how a layout is found to be retired once the positions' slot lost the layouts hash)
    legacy: tuple[str, str]  # the ranking and records of the earlier key layout (format 1)


def board_keys(prefix: str, board_id: str) -> BoardKeys:
    tag = board_tag(prefix, board_id)
    return BoardKeys(sequence=f"{tag}:seq", layout=f"{tag}:layout", legacy=(f"{tag}:rank", f"{tag}:rec"))


NOTE_MARK = "m"  # after the version buckets' prefix: a metadata bucket (no hex digit: no clash)


@dataclass(frozen=True, slots=True)
class ShardKeys:
    """One shard of one layout generation of a board; every key shares the shard's tag."""

    ranking: str  # sorted set: member -> score, ascending order is rank order
    state: str  # "live" or "building": scripts refuse a layout whose state is not the expected one
    buckets: str  # prefix of the version buckets: + 4 hex digits (see ``bucket_of``)

    def bucket(self, user_id: str) -> str:
        return self.buckets + bucket_of(user_id)

    def note_bucket(self, user_id: str) -> str:
        """The player's metadata bucket (a hash: userId -> the metadata of the award that holds
        its score): the version buckets' prefix, ``m``, the same 4 hex digits. Written only for
        players with metadata, so a board without any has none of these keys."""
        return self.note_bucket_of(self.bucket(user_id))

    def note_bucket_of(self, bucket: str) -> str:
        """The metadata bucket beside the version bucket ``bucket``."""
        return self.buckets + NOTE_MARK + bucket[len(self.buckets) :]

    def all_buckets(self) -> list[str]:
        return [f"{self.buckets}{b:0{BUCKET_DIGITS}x}" for b in range(16**BUCKET_DIGITS)]

    def all_note_buckets(self) -> list[str]:
        return [f"{self.buckets}{NOTE_MARK}{b:0{BUCKET_DIGITS}x}" for b in range(16**BUCKET_DIGITS)]


def shard_keys(prefix: str, board_id: str, generation: str, shard: int) -> ShardKeys:
    tag = shard_tag(prefix, board_id, shard)
    return ShardKeys(ranking=f"{tag}:rank:{generation}", state=f"{tag}:state:{generation}",
                     buckets=f"{tag}:v:{generation}:")  # fmt: skip


def positions_key(prefix: str) -> str:
    """The projection's asOf positions and epoch (one hash, fields below)."""
    return f"{prefix}:{{{prefix}:positions}}"


def layouts_key(prefix: str) -> str:
    """Every board's live layout, ``board`` -> ``generation<TAB>shards``, in the slot of the positions:
    readers and the projector find a board's layout here (``regions.stores.redis.layouts``)."""
    return f"{prefix}:{{{prefix}:positions}}:layouts"


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


def retired_key(prefix: str) -> str:
    """Layouts swapped out and not yet deleted: a set of ``board<TAB>generation<TAB>shards``."""
    return f"{prefix}:{{{prefix}:projector}}:retired"


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
