"""Records of a player's erasure on the platform's topics.

- An **erasure record** (key ``\\x00erasure|<token>``) is written by the region where the erasure was
  asked for into every partition of its awards topic, and replicated like an award. Every region's
  processor, meeting it in a partition, removes each of the player's states there (a tombstone in the
  totals topic per state, which the projection reads as "remove the player and its record") and from
  then on drops any award, correction or moderation of the player it meets (an erasure list, in its
  store and its changelog). ``lifted`` lifts the erasure: the player may come back with new awards.
- **Erased** (key ``\\x00erased|<token>`` in the totals topic) is the processor's changelog of its
  erasure list. It names the player by ``token`` only (``erasure_token``): the list outlives the
  player's data without holding their id.
"""

from __future__ import annotations

import hashlib

import msgspec

ERASURE_PREFIX = b"\x00erasure|"
ERASED_PREFIX = b"\x00erased|"


def erasure_token(user_id: str) -> str:
    """The name the erasure list keeps for a player: a digest of the id, not the id."""
    return hashlib.sha256(b"lb-erasure\x00" + user_id.encode()).hexdigest()[:32]


def erasure_key(token: str) -> bytes:
    """Key of an erasure record in an awards topic (one in every partition)."""
    return ERASURE_PREFIX + token.encode()


def erased_key(token: str) -> bytes:
    """Key of a task's Erased record in a totals partition."""
    return ERASED_PREFIX + token.encode()


class ErasureRecord(msgspec.Struct, frozen=True, kw_only=True):
    """Erase player ``user_id`` (named by ``token`` in the key), as ``region`` asked at ``requested_at_ms``;
    with ``lifted``, end that erasure instead."""

    user_id: str
    token: str
    region: str
    requested_at_ms: int
    lifted: bool = False


class Erased(msgspec.Struct, frozen=True, kw_only=True, tag="erased"):
    """The player named ``token`` is on a task's erasure list (``lifted``: no longer); a totals record."""

    token: str
    lifted: bool = False


encode_erasure = msgspec.msgpack.Encoder().encode
decode_erasure = msgspec.msgpack.Decoder(ErasureRecord).decode
