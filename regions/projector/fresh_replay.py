"""A rebuild's replay of the totals topic into each board's fresh layout, with its checkpoint.

A board's fresh layout has the request's shard count when the request reshards it, else the shard
count of its live layout, else (a new board, or after a loss) the one its totals carry. The replay
decodes a batch and prepares its apply while Redis applies the batches before (``pipeline``); what
it covers (positions, close cutoffs, tie policies, offsets) counts only batches applied, in order,
so a rebuild resumed from its checkpoint loses nothing.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import msgspec
from aiokafka import ConsumerRecord, TopicPartition

from regions.core.boards import TiePolicy
from regions.core.positions import SourceKey, SourcePosition, merge_marks
from regions.projector.pipeline import ApplyPipeline
from regions.projector.totals import TotalsBatch, of_board
from regions.runtime.settings import KafkaSettings
from regions.stores.kafka.clients import replay
from regions.stores.redis.control import RebuildRequest
from regions.stores.redis.layouts import Layout
from regions.stores.redis.projection import BoardTotals, RedisProjection


class Progress(Protocol):
    """Where the replay records how far it is (the rebuild's recorded request)."""

    @property
    def request(self) -> RebuildRequest: ...

    def replayed(self, done: int, total: int) -> None: ...

    async def flush(self, checkpoint: Callable[[], str], final: bool = False) -> None: ...


@dataclass(slots=True)
class FreshReplay:
    """Applies replayed totals to each board's fresh layout and remembers what the replay covers."""

    projection: RedisProjection
    prefix: str
    region: str
    progress: Progress
    covered: dict[SourceKey, SourcePosition] = field(default_factory=dict)
    cutoffs: dict[str, dict[str, int]] = field(default_factory=dict)  # close cutoffs the replay reached
    fresh: dict[str, Layout] = field(default_factory=dict)  # board -> the layout being built
    swapped: set[str] = field(default_factory=set)  # boards whose fresh layout is live already
    ties: dict[str, TiePolicy] = field(default_factory=dict)  # board -> its tie policy (from its totals)
    offsets: dict[int, int] = field(default_factory=dict)  # totals partition -> next offset to replay
    skipped: int = 0
    # the batches being applied, each with its last record
    _applying: ApplyPipeline[tuple[TotalsBatch, ConsumerRecord]] = field(init=False)

    def __post_init__(self) -> None:
        self._applying = ApplyPipeline(self._applied)

    def checkpoint(self) -> str:
        """Where the replay is, with what it found so far: a rebuild resumed from here loses nothing."""
        covered = [
            (r, p, m.offset, m.accepted_at_ms, m.heartbeat_at_ms, m.gaps)
            for (r, p), m in self.covered.items()
        ]
        boards = {b: (layout.shards, self.ties.get(b, TiePolicy.USER_ID)) for b, layout in self.fresh.items()}
        return _encode_checkpoint(_Checkpoint(self.offsets, covered, self.cutoffs, boards)).decode()

    def resume(self, raw: str) -> dict[int, int]:
        """Take up a checkpoint; the offsets to replay from."""
        found = _decode_checkpoint(raw)
        self.covered = {(r, p): SourcePosition(o, a, h, g) for r, p, o, a, h, g in found.covered}
        self.cutoffs = found.cutoffs
        request = self.progress.request
        self.fresh = {b: Layout(b, f"{request.generation}x{n}", n) for b, (n, _) in found.boards.items()}
        self.ties = {b: tie for b, (_, tie) in found.boards.items()}
        self.offsets = dict(found.offsets)
        return self.offsets

    async def replay(
        self, kafka: KafkaSettings, tps: list[TopicPartition], start: dict[TopicPartition, int] | None
    ) -> dict[TopicPartition, int]:
        """Replay ``tps`` from ``start`` to their end offsets now into the fresh layouts, every
        batch applied when it returns; those end offsets."""
        try:
            end = await replay(kafka, tps, self, start=start, progress=self.progress.replayed)
            await self._applying.drain()
            return end
        finally:
            await self._applying.cancel()  # stopped by an error: the applies in flight go with it

    async def __call__(self, records: list[ConsumerRecord]) -> None:
        """Take one partition's batch: decode it on a worker thread, lay out the boards it meets
        first, then send its apply (see ``pipeline``)."""
        batch, work = await asyncio.to_thread(self._decoded, records)
        await self._lay_out(work)
        apply = functools.partial(
            self.projection.apply_fresh, [(self.fresh[w.board_id], w.totals) for w in work], self.swapped
        )
        await self._applying.send(apply, (batch, records[-1]))

    def _decoded(self, records: list[ConsumerRecord]) -> tuple[TotalsBatch, list[BoardTotals]]:
        batch = TotalsBatch(self.region)
        batch.add(records)
        if self.progress.request.board:
            batch.only(self.progress.request.board)
        return batch, batch.by_board()

    async def _applied(self, applied: tuple[TotalsBatch, ConsumerRecord]) -> None:
        """Remember what a batch applied covers and record the progress."""
        batch, last = applied
        request = self.progress.request
        self.covered = merge_marks(self.covered, batch.marks)
        for board, reached in batch.cutoffs.items():
            if not request.board or of_board(board, request.board):
                self.cutoffs.setdefault(board, {}).update(reached)
        self.skipped += len(batch.unprojectable)  # reconciled by the live projector when it met them
        self.ties.update((t.board_id, t.tie_policy) for t in batch.latest.values())
        self.offsets[last.partition] = last.offset + 1  # (replay hands one partition's)
        await self.progress.flush(self.checkpoint)

    async def _lay_out(self, work: list[BoardTotals]) -> None:
        new = [w for w in work if w.board_id not in self.fresh]
        if not new:
            return
        request = self.progress.request
        live = await self.projection.layouts.live(w.board_id for w in new)
        layouts = []
        for w in new:
            current = live[w.board_id]
            shards = request.shards or (current.shards if current is not None else w.shards)
            # The shard count is part of the generation: a resumed rebuild that lays a board out
            # otherwise (after a loss, from other totals) never mixes two layouts in one set of keys.
            layouts.append(Layout(w.board_id, f"{request.generation}x{shards}", shards))
            if current == layouts[-1]:  # a rebuild that swapped it in, then stopped: it is live
                self.swapped.add(w.board_id)
        await self.projection.layouts.prepare(layouts)
        self.fresh.update({layout.board_id: layout for layout in layouts})

    @property
    def boards(self) -> list[str]:
        return sorted(self.fresh)


class _Checkpoint(msgspec.Struct, array_like=True):
    offsets: dict[int, int]
    covered: list[tuple[str, int, int, int, int, int]]  # region, partition, offset, accepted, heartbeat, gaps
    cutoffs: dict[str, dict[str, int]]
    boards: dict[str, tuple[int, TiePolicy]]  # board -> its fresh layout's shard count, its tie policy


_encode_checkpoint = msgspec.json.Encoder().encode
_decode_checkpoint = msgspec.json.Decoder(_Checkpoint).decode
