"""Records of moderation on the platform's topics: hiding a player's entry on a board, and showing it again.

- A **moderation record** (key ``\\x00moderation|<board>|<user>``) is written by the board's home
  region into the awards partition of that player's key (``<board>|<user>``), once per action, and
  replicated like an award. Every region's processor applies it as a versioned change of the
  player's states on the board (``boards``: the board's id, or the ids of its periods the record
  names), so every region hides and shows the player at the same position of the home's stream.
  ``sequence`` orders a board's actions (1, 2, ...): a processor applies an action only when it is
  newer than the player's last one, so replays and copies change nothing.
- **Moderated** (key ``\\x00moderated|<board>|<user>`` in the totals topic) is the processor's record
  of the player's last action on the board: its changelog of moderation (the totals the action
  changed are written next to it, with ``hidden`` set).
"""

from __future__ import annotations

import msgspec

MODERATION_PREFIX = b"\x00moderation|"
MODERATED_PREFIX = b"\x00moderated|"


def moderation_key(board_id: str, user_id: str) -> bytes:
    """Key of a moderation record in an awards topic (its partition is that of ``<board>|<user>``)."""
    return MODERATION_PREFIX + f"{board_id}|{user_id}".encode()


def moderated_key(board_id: str, user_id: str) -> bytes:
    """Key of a task's Moderated record of one player of one board in a totals partition."""
    return MODERATED_PREFIX + f"{board_id}|{user_id}".encode()


class ModerationRecord(msgspec.Struct, frozen=True, kw_only=True):
    """Action ``sequence`` of a board's moderation: the player is hidden (``hidden``) or shown again.
    ``region`` is the board's home region, which wrote it; ``at_ms`` when the action was decided;
    ``boards`` the state ids it changes now (the board's, or its periods' at that time; awards of
    later periods find the action by the board's id). A ``reason`` is kept in the home's log, not here."""

    board_id: str
    user_id: str
    sequence: int
    hidden: bool
    region: str
    at_ms: int
    boards: list[str]
    # The board's rules, as an award carries them: the totals the action changes are written with them
    sort_order: str
    tie_policy: str
    shards: int = 1
    rolling: bool = False  # a ROLLING board: a player with no points left in the window stays removed


class Moderated(msgspec.Struct, frozen=True, kw_only=True, tag="moderated"):
    """A player's last moderation action on a board, as a processor task applied it; a totals record."""

    board_id: str
    user_id: str
    sequence: int
    hidden: bool


encode_moderation = msgspec.msgpack.Encoder().encode
decode_moderation = msgspec.msgpack.Decoder(ModerationRecord).decode
