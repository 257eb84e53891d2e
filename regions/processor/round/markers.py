"""A board's markers in its regions' awards: close cutoffs, and the expiry of ROLLING boards' days.

A board's first cutoff marker from a region becomes that (board, region)'s cutoff in this partition
(recorded in the store and sent to the totals topic as ``CutoffReached``; later markers change
nothing), and releases the board's held corrections whose fold is final now. A ROLLING board's expiry
marker (written by its home region) drops the buckets of the days that left the window from exactly
the players the day index names, with a new versioned total each (or their removal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from regions.core.boards import Aggregation
from regions.core.rolling import expire
from regions.processor.round.corrections import Corrections
from regions.processor.round.state import RoundState, Source, Unprocessable, decode_or_refuse
from schema.lifecycle import CUTOFF_PREFIX, CutoffMarker, LifecycleCodec, cutoff_reached_key
from schema.records import EXPIRY_PREFIX, CutoffReached, PlayerTotal, totals_key
from schema.windows import ExpiryMarker, ExpiryReached, expiry_key

M = TypeVar("M", CutoffMarker, ExpiryMarker)


def board_marker(kind: str, decode: Callable[[bytes], M], prefix: bytes, source: Source,
                 key: bytes, value: bytes) -> tuple[M, str]:  # fmt: skip
    """A board's control record (cutoff or expiry marker) and its board; refused unless its key
    names its board and it comes from the region that wrote it."""
    marker = decode_or_refuse(decode, value, "undecodable_control")
    board_id = key[len(prefix) :].decode(errors="replace")
    if marker.board_id != board_id or marker.region != source.region:
        raise Unprocessable(
            "unprocessable_control",
            f"{kind} marker of {marker.board_id!r} by {marker.region!r} under key of {board_id!r} "
            f"in {source.region}'s awards",
        )
    return marker, board_id


class CutoffMarkers:
    """Records each (board, region)'s close cutoff in this partition, the first time it is met."""

    def __init__(self, state: RoundState, corrections: Corrections) -> None:
        self._state = state
        self._corrections = corrections
        self._decode = LifecycleCodec().marker

    def add(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        state = self._state
        _, board_id = board_marker("cutoff", self._decode, CUTOFF_PREFIX, source, key, value)
        cutoff_key = (board_id, source.region)
        if state.cutoff(cutoff_key) is not None:
            state.counts["cutoff_repeat"] += 1  # written twice (a restart, two workers): the first counts
            return
        state.cutoffs[cutoff_key] = offset
        reached = CutoffReached(board_id=board_id, region=source.region, source_partition=state.partition,
                                source_offset=offset)  # fmt: skip
        state.send("totals", cutoff_reached_key(board_id, source.region), reached)
        state.counts["cutoff"] += 1
        self._corrections.release(board_id)


class ExpiryMarkers:
    """Expires the days of ROLLING boards that left their window, player by player."""

    def __init__(self, state: RoundState) -> None:
        self._state = state

    def add(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        state = self._state
        marker, board_id = board_marker("expiry", state.codec.expiry, EXPIRY_PREFIX, source, key, value)
        known = state.expired_through(board_id)
        if known is not None and marker.expired_through <= known:
            state.counts["expiry_repeat"] += 1  # replicated twice, written again: nothing new expires
            return
        try:
            aggregation = Aggregation(marker.aggregation)
        except ValueError as exc:
            raise Unprocessable("unprocessable_control", str(exc)) from exc
        for entry in state.days.entries(board_id, known, marker.expired_through):
            state.days.remove(entry)
            self._expire_player(marker, aggregation, entry[2], source.region, offset)
        state.expired[board_id] = marker.expired_through
        reached = ExpiryReached(board_id=board_id, expired_through=marker.expired_through,
                                source_region=source.region, source_partition=state.partition,
                                source_offset=offset)  # fmt: skip
        state.send("totals", expiry_key(board_id), reached)
        state.counts["expiry"] += 1

    def _expire_player(
        self, marker: ExpiryMarker, aggregation: Aggregation, user: str, region: str, offset: int
    ) -> None:
        state, key = self._state, (marker.board_id, user)
        player = state.player(key)
        changed = None if player is None else expire(aggregation, player, marker.expired_through)
        if changed is None:
            return  # an index entry of a day the player no longer has, or one already visited
        state.players[key] = changed
        total = PlayerTotal(
            board_id=marker.board_id, user_id=user, total=changed.total, version=changed.version,
            reached=changed.reached, sort_order=marker.sort_order, tie_policy=marker.tie_policy,
            source_partition=state.partition, source_offset=offset, event_id="", source_region=region,
            buckets=changed.buckets, removed=not changed.buckets, shards=marker.shards,
            metadata=changed.metadata, notes=changed.notes, hidden=state.hidden(*key),
        )  # fmt: skip
        state.send("totals", totals_key(*key), total)
        state.counts["expired_players"] += 1
