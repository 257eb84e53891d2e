"""Awards: each folded into its player's state, exactly once per event id.

An award of a board after its region's cutoff is late: it goes to reconciliation (``late``), never
applied. Awards carry their board's time window. On a board with periods an award counts in the
period that holds its event time, as the board ``<board>@<period key>`` (``schema.scoped``): its own
state, totals, cutoffs. An award of an approximate board counts in its sketch (``approximate``). On a ROLLING board it counts in the day bucket of its event time (an entry
of the day index); an award of a day that has left the window is late. An award of an erased
player is dropped (``erasure``; on an approximate board it counts in the sketch only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from regions.core.aggregation import (
    Applied,
    Duplicate,
    Outcome,
    Replaced,
    apply_award,
)
from regions.core.boards import SortOrder, TiePolicy, counted_board_id
from regions.core.lifecycle import is_late
from regions.core.periods import InvalidWindow, WindowSpec, day_key, day_of
from regions.core.rolling import TooLate, apply_rolling
from regions.core.windows import decode_window
from regions.processor.round.erasure import Dropped
from regions.processor.round.state import RoundState, Source, Unprocessable, decode_or_refuse, refusal
from regions.stores.task_state import StateKey
from schema.records import AppliedAward, AwardEvent, PlayerTotal, Reconciliation, totals_key

if TYPE_CHECKING:
    from regions.processor.round.approximate import Trending


class Awards:
    """Folds the round's awards: new totals, the copies remembered, the applied awards for the audit."""

    def __init__(self, state: RoundState, trending: Trending, *, honour_cutoffs: bool = True) -> None:
        self._state = state
        self._trending = trending  # approximate boards' awards
        self._honour_cutoffs = honour_cutoffs

    def add(self, source: Source, value: bytes, offset: int) -> None:
        state = self._state
        award = decode_or_refuse(state.codec.award, value, "undecodable")
        try:
            SortOrder(award.sort_order), TiePolicy(award.tie_policy)  # rules this version must know
            spec = decode_window(award.window)
            board_id = self._board_id(award, spec)
        except ValueError as exc:  # an aggregation, order, tie policy or window this version does not know
            raise Unprocessable("unprocessable", str(exc), award) from exc
        cutoff = state.cutoff((board_id, source.region))
        if self._honour_cutoffs and is_late(cutoff, offset):
            raise Unprocessable(
                "late",
                f"accepted by {source.region} at offset {offset} of partition {state.partition}, after the "
                f"close cutoff of {board_id} at offset {cutoff}",
                award,
            )
        if award.approximate:
            self._trending.add(board_id, award, source, offset, same_state=spec is None)
            return
        state_key = (board_id, award.user_id)
        try:
            outcome = self._outcome(award, state_key, spec)
        except ValueError as exc:  # an aggregation this version does not know
            raise Unprocessable("unprocessable", str(exc), award) from exc
        state.award_read(source.region, offset, award.accepted_at_ms)
        if isinstance(outcome, Applied):
            self._applied(board_id, award, outcome, source.region, offset)
        elif isinstance(outcome, Replaced):
            self._replaced(board_id, award, outcome, source, offset)
        elif isinstance(outcome, Duplicate):
            state.counts["duplicate"] += 1
        elif isinstance(outcome, Dropped):
            state.counts["dropped"] += 1  # an erased player's
        elif isinstance(outcome, TooLate):
            raise Unprocessable(
                "late",
                f"its day {day_key(outcome.day)} has left {award.board_id}'s rolling window (expired through "
                f"{day_key(outcome.expired_through)})",
                award,
            )
        else:
            raise Unprocessable(*refusal(outcome), award)

    @staticmethod
    def _board_id(award: AwardEvent, spec: WindowSpec | None) -> str:
        try:
            return counted_board_id(award.board_id, spec, award.event_at_ms)
        except InvalidWindow as exc:
            raise ValueError(str(exc)) from exc

    def _outcome(
        self, award: AwardEvent, key: StateKey, spec: WindowSpec | None
    ) -> Outcome | TooLate | Dropped:
        state = self._state
        player = state.player(key)
        if player is None and state.is_erased(award.user_id):
            return Dropped(award.user_id)
        seen = state.seen_of(award.event_id)
        if spec is None or not spec.rolling:
            return apply_award(player, seen, award, state.memory, same_state=spec is None)
        day = day_of(spec, award.event_at_ms)
        outcome = apply_rolling(player, seen, award, state.memory, day=day,
                                expired_through=state.expired_through(award.board_id))  # fmt: skip
        if isinstance(outcome, Applied):
            state.days.add((award.board_id, day, award.user_id))
        return outcome

    def _applied(
        self, board_id: str, award: AwardEvent, outcome: Applied | Replaced, region: str, offset: int
    ) -> None:
        """The award's player has a new state: a new total, the copy remembered, the applied award
        for the audit (a replaced copy's row is written over)."""
        state, key = self._state, (board_id, award.user_id)
        state.players[key] = outcome.state
        total = PlayerTotal(
            board_id=board_id, user_id=award.user_id, total=outcome.state.total,
            version=outcome.state.version, reached=outcome.state.reached, sort_order=award.sort_order,
            tie_policy=award.tie_policy, source_partition=state.partition, source_offset=offset,
            event_id=award.event_id, source_region=region, buckets=outcome.state.buckets,
            shards=award.shards, contributions=outcome.state.contributions,
            metadata=outcome.state.metadata, notes=outcome.state.notes, hidden=state.hidden(*key),
        )  # fmt: skip
        state.send("totals", totals_key(*key), total)
        state.remember(award.event_id, outcome.seen)
        applied = AppliedAward(award=award, total=total.total, version=total.version,
                               source_partition=state.partition, source_offset=offset, source_region=region)  # fmt: skip
        state.send("applied", totals_key(*key), applied)
        state.counts["applied"] += 1
        if isinstance(outcome, Applied):
            state.counts["dedupe_remembered"] += 1

    def _replaced(
        self, board_id: str, award: AwardEvent, outcome: Replaced, source: Source, offset: int
    ) -> None:
        """The award is another copy of one applied before, and it wins: its total and audit row
        replace the loser's. A loser with another payload goes to reconciliation, as the losing
        copy does in every region where it is read second."""
        state = self._state
        self._applied(board_id, award, outcome, source.region, offset)
        state.counts["applied"] -= 1
        state.counts["copy_replaced"] += 1
        if outcome.refused is not None:
            lost = outcome.refused  # what the memory kept of it: not its event time
            loser = msgspec.structs.replace(award, digest=lost.digest, accepted_at_ms=lost.at_ms,
                                            region=lost.region, amount=lost.amount or 0, occurred_at_ms=None)  # fmt: skip
            detail = (f"event {award.event_id} was replaced by the copy accepted by {award.region} at "
                      f"{award.accepted_at_ms} (digest {award.digest}): of several copies the earliest counts")  # fmt: skip
            value = Reconciliation(reason="conflicting_repeat", detail=detail, award=loser,
                                   source_partition=state.partition, source_offset=state.topic_offset,
                                   source_topic=source.topic, raw=None, source_region=lost.region)  # fmt: skip
            state.reconcile(totals_key(award.board_id, award.user_id), value)
