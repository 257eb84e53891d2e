"""Correction records of closed boards.

A correction record sets the player's total (a new version) once the task has met the cutoff of
every region the board closed with, so that no award of the board is folded after it; one met before
that is held in the store (and the totals changelog, ``CorrectionsHeld``) until then.
"""

from __future__ import annotations

from regions.core.aggregation import Conflict, Duplicate, Forgotten, OutOfRange
from regions.core.corrections import Corrected, UnknownPlayer, apply_correction, identity_of, is_final
from regions.processor.round.state import RoundState, Source, Unprocessable, decode_or_refuse, refusal
from schema.lifecycle import (
    CorrectionRecord,
    CorrectionsHeld,
    HeldCorrection,
    LifecycleCodec,
    correction_key,
    held_key,
)
from schema.records import PlayerTotal, Reconciliation, totals_key


def _same(a: CorrectionRecord, b: CorrectionRecord) -> bool:
    return (a.board_id, a.correction_id, a.user_id) == (b.board_id, b.correction_id, b.user_id)


def _correction_refusal(
    outcome: Conflict | OutOfRange | Forgotten | UnknownPlayer, record: CorrectionRecord
) -> tuple[str, str]:
    if isinstance(outcome, UnknownPlayer):
        return "correction_unknown_player", (
            f"correction {record.correction_id!r} of {record.board_id!r} adjusts {record.user_id!r}, who "
            "has no total in this partition"
        )
    return refusal(outcome)


class Corrections:
    """Applies the round's correction records, or holds them until their board's fold is final."""

    def __init__(self, state: RoundState) -> None:
        self._state = state
        self._decode = LifecycleCodec().correction

    def add(self, source: Source, key: bytes, value: bytes, offset: int) -> None:
        state = self._state
        record = decode_or_refuse(self._decode, value, "undecodable_control")
        if key != correction_key(record.board_id, record.user_id) or record.region != source.region:
            raise Unprocessable(
                "unprocessable_control",
                f"correction of {record.board_id!r}/{record.user_id!r} by {record.region!r} under key "
                f"{key!r} in {source.region}'s awards",
            )
        if state.player((record.board_id, record.user_id)) is None and state.is_erased(record.user_id):
            state.counts["dropped"] += 1  # an erased player's
            return
        held = HeldCorrection(record, source.topic, state.topic_offset, offset)
        if self._final(record):
            self._correct(held)
            return
        known = self._held(record.board_id)
        if any(_same(h.correction, record) for h in known):
            state.counts["correction_repeat"] += 1  # written again while held
            return
        self._set_held(record.board_id, (*known, held))
        state.counts["correction_held"] += 1

    def release(self, board_id: str) -> None:
        """A cutoff of ``board_id`` was met: apply the held corrections whose fold is final now."""
        held = self._held(board_id)
        ready = [h for h in held if self._final(h.correction)]
        if ready:
            self._set_held(board_id, tuple(h for h in held if h not in ready))
            for h in sorted(ready, key=lambda h: (h.correction.result_version, h.correction.user_id)):
                self._correct(h)

    def _final(self, record: CorrectionRecord) -> bool:
        """The partition has met the cutoff of every region the record's board closed with."""
        met = {region: self._state.cutoff((record.board_id, region)) is not None for region in record.regions}
        return is_final(record.regions, met)

    def _held(self, board_id: str) -> tuple[HeldCorrection, ...]:
        known = self._state.held.get(board_id)
        return known if known is not None else self._state.store.held(board_id)

    def _set_held(self, board_id: str, held: tuple[HeldCorrection, ...]) -> None:
        self._state.held[board_id] = held
        record = CorrectionsHeld(board_id=board_id, corrections=list(held))
        self._state.send("totals", held_key(board_id), record)

    def _correct(self, held: HeldCorrection) -> None:
        """Apply one correction record to the board's final fold in this partition."""
        state = self._state
        record, state_key = held.correction, (held.correction.board_id, held.correction.user_id)
        event_id = identity_of(record)[0]
        outcome = apply_correction(state.player(state_key), state.seen_of(event_id), record, state.memory)
        if isinstance(outcome, Corrected):
            state.players[state_key] = outcome.state
            state.remember(event_id, outcome.seen)
            total = PlayerTotal(
                board_id=record.board_id, user_id=record.user_id, total=outcome.state.total,
                version=outcome.state.version, reached=outcome.state.reached, sort_order=record.sort_order,
                tie_policy=record.tie_policy, source_partition=state.partition, source_offset=held.source_offset,
                event_id=event_id, source_region=record.region, metadata=outcome.state.metadata,
                notes=outcome.state.notes, hidden=state.hidden(*state_key),
            )  # fmt: skip
            state.send("totals", totals_key(*state_key), total)
            state.counts["corrected"] += 1
        elif isinstance(outcome, Duplicate):
            state.counts["correction_repeat"] += 1
        else:
            reason, detail = _correction_refusal(outcome, record)
            value = Reconciliation(reason=reason, detail=detail, award=None, source_partition=state.partition,
                                   source_offset=held.topic_offset, source_topic=held.topic,
                                   raw=state.codec.encode(record), source_region=record.region)  # fmt: skip
            # Keyed as an award's: readers find its board.
            state.reconcile(totals_key(record.board_id, record.user_id), value)
