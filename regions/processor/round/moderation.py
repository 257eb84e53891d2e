"""Moderation records: a player hidden on a board, or shown again (``regions.core.moderation``).

An action newer than the player's last one on the board is recorded (in the store and, as
``Moderated``, in the totals changelog) and gives each of the player's states it names a new version
with ``hidden`` set or cleared; the state itself (total, tie order, metadata) stays as it is, so a
hidden player's awards keep counting. On an approximate board, where an item has no state, its
candidate (if listed) is written again (``approximate``). An action not newer (a replay, a copy)
changes nothing.
"""

from __future__ import annotations

from dataclasses import replace

from regions.core.moderation import Moderation, is_newer
from regions.processor.round.approximate import Rules, Trending
from regions.processor.round.state import RoundState, Source, Unprocessable, decode_or_refuse
from schema.moderation import Moderated, ModerationRecord, decode_moderation, moderated_key, moderation_key
from schema.records import PlayerTotal, totals_key
from schema.scoped import split_board_id


class Moderations:
    """Applies the round's moderation records."""

    def __init__(self, state: RoundState, trending: Trending) -> None:
        self._state = state
        self._trending = trending  # approximate boards' candidates

    def add(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        state = self._state
        record = decode_or_refuse(decode_moderation, value, "undecodable_control")
        if (
            key != moderation_key(record.board_id, record.user_id)
            or record.region != source.region
            or any(split_board_id(b)[0] != record.board_id for b in record.boards)
        ):
            raise Unprocessable(
                "unprocessable_control",
                f"moderation of {record.board_id!r}/{record.user_id!r} by {record.region!r} under key {key!r} "
                f"in {source.region}'s awards",
            )
        player = (record.board_id, record.user_id)
        if state.is_erased(record.user_id):
            state.counts["dropped"] += 1  # an erased player's
            return
        if not is_newer(state.moderation(player), record.sequence):
            state.counts["moderation_repeat"] += 1
            return
        state.moderated[player] = Moderation(record.sequence, record.hidden)
        state.send("totals", moderated_key(*player), Moderated(board_id=record.board_id, user_id=record.user_id,
                                                              sequence=record.sequence, hidden=record.hidden))  # fmt: skip
        for board_id in record.boards:
            self._change(record, board_id, source.region, offset)
        state.counts["hidden" if record.hidden else "restored"] += 1

    def _change(self, record: ModerationRecord, board_id: str, region: str, offset: int) -> None:
        """The player's state on ``board_id``, if any, in a new version (hidden or shown)."""
        state, key = self._state, (board_id, record.user_id)
        prior = state.player(key)
        if prior is None:  # no state yet (the awards that make one find the action by the board's
            # id), or an approximate board's: its candidate, if listed, is written again
            rules = Rules(record.sort_order, record.tie_policy, record.shards)
            self._trending.moderate(board_id, record.user_id, rules, region, offset)
            return
        changed = replace(prior, version=prior.version + 1)
        state.players[key] = changed
        total = PlayerTotal(
            board_id=board_id, user_id=record.user_id, total=changed.total, version=changed.version,
            reached=changed.reached, sort_order=record.sort_order, tie_policy=record.tie_policy,
            source_partition=state.partition, source_offset=offset, event_id="", source_region=region,
            shards=record.shards, buckets=changed.buckets, removed=record.rolling and not changed.buckets,
            contributions=changed.contributions, metadata=changed.metadata, notes=changed.notes,
            hidden=record.hidden,
        )  # fmt: skip
        state.send("totals", totals_key(*key), total)
