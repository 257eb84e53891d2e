"""Awards of approximate (trending) boards: counted in the partition's sketch of their board (the
period's on a board with periods), with the partition's candidate list and its exact counts kept up
to date (``regions.core.candidates``); erasures and moderation of a listed item.

An award is deduplicated by event id like any award (``regions.core.candidates.count_award``). An
erased player's award (an item named like one) is still counted in the sketch, whose counters name
no item, so every region's counters stay the fold of the same awards whichever side of the erasure
an award landed on; it is never listed, audited or reconciled. An erasure takes the item off every
list of the partition that holds it (found by the store's index), with its exact count; a moderation
action writes a listed item's candidate again with ``hidden`` set or cleared.

At the end of the round (``finish``) each board it changed writes, in the round's transaction, the
absolute counters of every sketch block it changed, its candidate set (a new version) and the
partition's total, and the candidates for the projection: each new candidate, or one shown
otherwise (another estimate or verified count, or hidden or shown), as a ``PlayerTotal``
(``estimated``, with ``exact`` when verified) of the new version, each item no longer listed as a
tombstone, and the partition's total as member ``p<partition>`` of the board's companion
``<board>#counts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from regions.core.aggregation import Duplicate
from regions.core.approximate import ApproximateSpec, InvalidApproximate, decode_approximate
from regions.core.candidates import CandidateList, Candidates, Counted, changes, count_award
from regions.core.sketch import Shape, Sketch
from regions.processor.round.state import RoundState, Source, Unprocessable, refusal
from schema.records import AppliedAward, AwardEvent, PlayerTotal, Reconciliation, totals_key
from schema.scoped import counts_board_id, partition_member
from schema.sketch import CandidateSet, SketchBlock, candidates_key, sketch_key


@lru_cache(maxsize=1024)
def _spec(text: str) -> tuple[ApproximateSpec, Shape]:
    spec = decode_approximate(text)
    if spec is None:
        raise InvalidApproximate("approximate: empty")
    return spec, Shape.of(spec.epsilon, spec.delta)


@dataclass(frozen=True, slots=True)
class Rules:
    """The board's rules a candidate's total is written with (from an award or a moderation record)."""

    sort_order: str
    tie_policy: str
    shards: int


@dataclass(slots=True, eq=False)
class _Board:
    """One approximate board's candidates in this round (as the round found them, and as they are),
    its sketch once an award of it was read, and where its latest record came from."""

    listed: CandidateList
    candidates: Candidates
    sketch: Sketch | None = None
    rules: Rules | None = None
    region: str = ""
    offset: int = -1
    added: int = 0  # to the partition's total in this round
    counted: bool = False  # an award was counted
    changed: bool = False  # an item was erased, or moderated
    shown: set[str] = field(default_factory=set)  # items to write again (moderated)


class Trending:
    """Counts the round's awards of approximate boards, applies erasures and moderation to their
    candidates; ``finish`` writes what they changed."""

    def __init__(self, state: RoundState) -> None:
        self._state = state
        self._boards: dict[str, _Board] = {}

    def add(self, board_id: str, award: AwardEvent, source: Source, offset: int, *, same_state: bool) -> None:
        state = self._state
        board, sketch = self._counting(board_id, award)
        state.award_read(source.region, offset, award.accepted_at_ms)
        outcome = count_award(state.seen_of(award.event_id), award, state.memory, same_state=same_state)
        if isinstance(outcome, Duplicate):
            state.counts["duplicate"] += 1
            return
        if not isinstance(outcome, Counted):
            raise Unprocessable(*refusal(outcome), award)
        estimate = sketch.add(award.user_id, outcome.amount)
        board.added += outcome.amount
        board.rules = Rules(award.sort_order, award.tie_policy, award.shards)
        board.region, board.offset, board.counted = source.region, offset, True
        state.remember(award.event_id, outcome.seen)
        state.counts["dedupe_remembered"] += 0 if outcome.replaced else 1
        if state.is_erased(award.user_id):
            board.candidates.count_unlisted()
            state.counts["erased_counted"] += 1  # anonymously: in the counters only
            return
        board.candidates.offer(award.user_id, estimate, outcome.amount)
        state.counts["copy_replaced" if outcome.replaced else "applied"] += 1
        applied = AppliedAward(award=award, total=estimate, version=board.listed.version + 1,
                               source_partition=state.partition, source_offset=offset, source_region=source.region)  # fmt: skip
        state.send("applied", totals_key(board_id, award.user_id), applied)
        if outcome.refused is not None:
            self._refused(award, outcome, source)

    def erase(self, user_id: str) -> int:
        """Take the item off every list of the partition that holds it; returns how many did."""
        boards = {b for b, board in self._boards.items() if user_id in board.candidates.items}
        removed = 0
        for board_id in sorted(boards | set(self._state.store.candidate_lists_of(user_id))):
            board = self._board(board_id)
            if board.candidates.remove(user_id):
                board.changed = True
                removed += 1
        return removed

    def moderate(self, board_id: str, user_id: str, rules: Rules, region: str, offset: int) -> None:
        """A moderation action changed whether the item is hidden on ``board_id``: a listed item's
        candidate is written again (the action itself is in the round's state already)."""
        board = self._board(board_id)
        if user_id not in board.candidates.items:
            return  # not listed: if it joins, it is written hidden or shown as the action says
        board.shown.add(user_id)
        board.rules = board.rules or rules
        board.region, board.offset, board.changed = region, offset, True

    def _board(self, board_id: str) -> _Board:
        """The board's candidates in this round (the capacity is the list's own until an award of
        the board says the board's)."""
        known = self._boards.get(board_id)
        if known is None:
            listed = self._state.candidates.get(board_id) or self._state.store.candidates(board_id)
            known = self._boards[board_id] = _Board(listed, Candidates.of(listed, len(listed.items)))
        return known

    def _counting(self, board_id: str, award: AwardEvent) -> tuple[_Board, Sketch]:
        """The board, ready to count ``award``: its sketch, and its capacity from the award's settings."""
        board = self._board(board_id)
        if board.sketch is None:
            try:
                spec, shape = _spec(award.approximate)
            except InvalidApproximate as exc:
                raise Unprocessable("unprocessable", str(exc), award) from exc
            store = self._state.store
            board.sketch = Sketch(shape, lambda key: store.sketch_block((board_id, *key)))
            board.candidates.capacity = spec.capacity
        return board, board.sketch

    def _refused(self, award: AwardEvent, outcome: Counted, source: Source) -> None:
        """The copy counted before had another payload: it goes to reconciliation, as the losing
        copy does in every region that reads it second."""
        lost = outcome.refused
        if lost is None:
            return
        detail = (f"event {award.event_id} was replaced by the copy accepted by {award.region} at "
                  f"{award.accepted_at_ms} (digest {award.digest}): of several copies the earliest counts")  # fmt: skip
        value = Reconciliation(reason="conflicting_repeat", detail=detail, award=award,
                               source_partition=self._state.partition, source_offset=self._state.topic_offset,
                               source_topic=source.topic, raw=None, source_region=lost.region)  # fmt: skip
        self._state.reconcile(totals_key(award.board_id, award.user_id), value)

    def finish(self) -> None:
        """Write what the round changed, board by board (once, at the end of the round)."""
        boards, self._boards = self._boards, {}
        for board_id, board in sorted(boards.items()):
            if board.counted or board.changed:
                self._finish(board_id, board)

    def _finish(self, board_id: str, board: _Board) -> None:
        state, sketch = self._state, board.sketch if board.counted else None
        listed = board.candidates.listed(board.listed.version + 1, board.listed.total + board.added,
                                         None if sketch is None else sketch.estimate)  # fmt: skip
        for (row, block), counters in (sketch.changed_blocks() if sketch is not None else {}).items():
            state.sketch[(board_id, row, block)] = counters
            state.send("totals", sketch_key(board_id, row, block),
                       SketchBlock(board_id=board_id, row=row, block=block, counters=list(counters)))  # fmt: skip
        state.candidates[board_id] = listed
        state.send("totals", candidates_key(board_id), CandidateSet(
            board_id=board_id, version=listed.version, total=listed.total, items=list(listed.items),
            exact=list(listed.exact), lossless=listed.lossless))  # fmt: skip
        self._candidates(board_id, board, listed)
        if sketch is not None:
            counts, member = counts_board_id(board_id), partition_member(state.partition)
            state.send("totals", totals_key(counts, member),
                       self._total(board, counts, member, (listed.total, None), listed.version, shards=1))  # fmt: skip

    def _candidates(self, board_id: str, board: _Board, listed: CandidateList) -> None:
        """For the projection: each candidate new, shown otherwise or moderated as a total of the
        list's new version, each item no longer listed as a tombstone."""
        state = self._state
        changed, gone = changes(board.listed, listed)
        shown = listed.shown()
        for item in sorted(set(changed) | (board.shown & shown.keys())):
            state.send("totals", totals_key(board_id, item),
                       self._total(board, board_id, item, shown[item], listed.version))  # fmt: skip
        for item in gone:
            state.out.append((state.kafka.topic("totals"), totals_key(board_id, item), None))

    def _total(
        self, board: _Board, board_id: str, item: str, shown: tuple[int, int | None], version: int,
        *, shards: int | None = None,
    ) -> PlayerTotal:  # fmt: skip
        """``item``'s total: ``shown`` is its estimate and its verified count (None: not verified)."""
        rules = board.rules
        if rules is None:  # only an award or a moderation record changes what a candidate shows
            raise RuntimeError(f"no award or moderation record of {board_id!r} gave its rules")
        return PlayerTotal(
            board_id=board_id, user_id=item, total=shown[0], version=version, reached="",
            sort_order=rules.sort_order, tie_policy=rules.tie_policy, source_partition=self._state.partition,
            source_offset=board.offset, event_id="", source_region=board.region,
            shards=rules.shards if shards is None else shards, hidden=self._state.hidden(board_id, item),
            estimated=True, exact=shown[1],
        )  # fmt: skip
