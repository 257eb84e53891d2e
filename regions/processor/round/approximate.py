"""Awards of approximate (trending) boards: counted in the partition's sketch of their board (the
period's on a board with periods), with the partition's candidate list kept up to date.

An award is deduplicated by event id like any award (``regions.core.candidates.count_award``). At
the end of the round (``finish``) each board it changed writes, in the round's transaction, the
absolute counters of every sketch block it changed, its candidate set (a new version) and the
partition's total, and the candidates for the projection: each new or re-estimated candidate as a
``PlayerTotal`` (``estimated``) of the new version, each item no longer listed as a tombstone, and
the partition's total as member ``p<partition>`` of the board's companion ``<board>#counts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from regions.core.aggregation import Duplicate
from regions.core.approximate import ApproximateSpec, InvalidApproximate, decode_approximate
from regions.core.candidates import CandidateList, Candidates, Counted, changes, count_award, ranked
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


@dataclass(slots=True, eq=False)
class _Board:
    """One approximate board's sketch and candidates in this round, and its latest award."""

    spec: ApproximateSpec
    sketch: Sketch
    listed: CandidateList
    candidates: Candidates
    last: AwardEvent
    region: str = ""
    offset: int = -1
    added: int = 0  # to the partition's total in this round
    counted: bool = False


class Trending:
    """Counts the round's awards of approximate boards; ``finish`` writes what they changed."""

    def __init__(self, state: RoundState) -> None:
        self._state = state
        self._boards: dict[str, _Board] = {}

    def add(self, board_id: str, award: AwardEvent, source: Source, offset: int, *, same_state: bool) -> None:
        state = self._state
        board = self._board(board_id, award)
        state.award_read(source.region, offset, award.accepted_at_ms)
        if state.is_erased(award.user_id):
            state.counts["dropped"] += 1  # an erased player's (an item named like one)
            return
        outcome = count_award(state.seen_of(award.event_id), award, state.memory, same_state=same_state)
        if isinstance(outcome, Duplicate):
            state.counts["duplicate"] += 1
            return
        if not isinstance(outcome, Counted):
            raise Unprocessable(*refusal(outcome), award)
        estimate = board.sketch.add(award.user_id, outcome.amount)
        board.candidates.offer(award.user_id, estimate)
        board.added += outcome.amount
        board.last, board.region, board.offset, board.counted = award, source.region, offset, True
        state.remember(award.event_id, outcome.seen)
        state.counts["copy_replaced" if outcome.replaced else "applied"] += 1
        state.counts["dedupe_remembered"] += 0 if outcome.replaced else 1
        applied = AppliedAward(award=award, total=estimate, version=board.listed.version + 1,
                               source_partition=state.partition, source_offset=offset, source_region=source.region)  # fmt: skip
        state.send("applied", totals_key(board_id, award.user_id), applied)
        if outcome.refused is not None:
            self._refused(award, outcome, source)

    def _board(self, board_id: str, award: AwardEvent) -> _Board:
        known = self._boards.get(board_id)
        if known is not None:
            return known
        try:
            spec, shape = _spec(award.approximate)
        except InvalidApproximate as exc:
            raise Unprocessable("unprocessable", str(exc), award) from exc
        store = self._state.store
        sketch = Sketch(shape, lambda key: store.sketch_block((board_id, *key)))
        listed = self._state.candidates.get(board_id) or store.candidates(board_id)
        board = _Board(spec, sketch, listed, Candidates.of(listed, spec.capacity), award)
        self._boards[board_id] = board
        return board

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
            if board.counted:
                self._finish(board_id, board)

    def _finish(self, board_id: str, board: _Board) -> None:
        state = self._state
        estimates = {item: board.sketch.estimate(item) for item in board.candidates.items}
        after = ranked(estimates, board.spec.capacity)
        changed, gone = changes(board.listed, after)
        listed = CandidateList(board.listed.version + 1, board.listed.total + board.added, after)
        for (row, block), counters in board.sketch.changed_blocks().items():
            state.sketch[(board_id, row, block)] = counters
            state.send("totals", sketch_key(board_id, row, block),
                       SketchBlock(board_id=board_id, row=row, block=block, counters=list(counters)))  # fmt: skip
        state.candidates[board_id] = listed
        state.send("totals", candidates_key(board_id), CandidateSet(
            board_id=board_id, version=listed.version, total=listed.total, items=list(after)))  # fmt: skip
        for item, estimate in changed:
            total = self._total(board, board_id, item, estimate, listed, board.last.shards)
            state.send("totals", totals_key(board_id, item), total)
        for item in gone:
            state.out.append((state.kafka.topic("totals"), totals_key(board_id, item), None))
        counts = counts_board_id(board_id)
        member = partition_member(state.partition)
        state.send(
            "totals", totals_key(counts, member), self._total(board, counts, member, listed.total, listed, 1)
        )

    def _total(
        self, board: _Board, board_id: str, item: str, total: int, listed: CandidateList, shards: int
    ) -> PlayerTotal:
        award = board.last
        return PlayerTotal(
            board_id=board_id, user_id=item, total=total, version=listed.version, reached="",
            sort_order=award.sort_order, tie_policy=award.tie_policy, source_partition=self._state.partition,
            source_offset=board.offset, event_id="", source_region=board.region, shards=shards,
            hidden=self._state.hidden(board_id, item), estimated=True,
        )  # fmt: skip
