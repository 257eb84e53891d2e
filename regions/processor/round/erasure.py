"""Erasure records: a player removed from every state of this partition, and kept out from then on.

A record erases: every state of the player in the partition goes (the store's index by user id,
and those this round made), each with a tombstone in the totals topic (the projection removes the
player and its record), with the player's moderation and ROLLING day index entries; an item named
like the player leaves every approximate board's candidate list that holds it, with its exact
count, and its candidate leaves the projection the same way (``approximate``); the player's
token joins the erasure list (``Erased`` in the totals changelog). From then on an award,
correction or moderation record of the player is dropped (``dropped``), never applied or sent to
reconciliation (which would keep the id); on an approximate board its award still counts in the
sketch's anonymous counters, never listed. A lifted erasure takes the token off the list.
"""

from __future__ import annotations

from dataclasses import dataclass

from regions.processor.round.approximate import Trending
from regions.processor.round.state import RoundState, Source, Unprocessable, decode_or_refuse
from regions.stores.task_state import StateKey
from schema.erasure import Erased, decode_erasure, erased_key, erasure_key, erasure_token
from schema.moderation import moderated_key
from schema.records import totals_key
from schema.scoped import split_board_id


@dataclass(frozen=True, slots=True)
class Dropped:
    """An award of an erased player: not applied, not reconciled."""

    user_id: str


class Erasures:
    """Applies the round's erasure records."""

    def __init__(self, state: RoundState, trending: Trending) -> None:
        self._state = state
        self._trending = trending  # approximate boards' candidates

    def add(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        state = self._state
        record = decode_or_refuse(decode_erasure, value, "undecodable_control")
        if key != erasure_key(record.token) or (not record.lifted and record.token != erasure_token(record.user_id)):
            raise Unprocessable("unprocessable_control", f"erasure under key {key!r} in {source.region}'s awards")
        if record.lifted:
            state.erased[record.token] = False
            state.send("totals", erased_key(record.token), Erased(token=record.token, lifted=True))
            state.counts["erasure_lifted"] += 1
            return
        states = self._states_of(record.user_id)
        for state_key in states:
            self._remove(state_key)
        listed = self._trending.erase(record.user_id)
        if not states and not listed and state.is_erased(record.user_id):
            state.counts["erasure_repeat"] += 1  # replicated twice, written again: nothing is left
            return
        state.erased[record.token] = True
        state.send("totals", erased_key(record.token), Erased(token=record.token))
        state.counts["erased_players"] += len(states)
        state.counts["erased_candidates"] += listed

    def _states_of(self, user_id: str) -> list[StateKey]:
        state = self._state
        found = {k for k in state.store.states_of(user_id) if k not in state.erased_players}
        found |= {k for k in state.players if k[1] == user_id}
        return sorted(found)

    def _remove(self, key: StateKey) -> None:
        state = self._state
        player = state.player(key)
        base = (split_board_id(key[0])[0], key[1])
        moderated = state.moderation(base) is not None
        state.players.pop(key, None)
        state.erased_players.add(key)
        if player is not None:
            for day, _, _ in player.buckets:
                state.days.remove((key[0], day, key[1]))
        state.out.append((state.kafka.topic("totals"), totals_key(*key), None))
        if moderated:
            state.moderated.pop(base, None)
            state.erased_players.add(base)  # (its moderation entry goes with it)
            state.out.append((state.kafka.topic("totals"), moderated_key(*base), None))
