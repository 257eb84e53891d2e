"""The lifecycle worker's part in time windows: periods that roll over by themselves, rolling days
that expire.

- **Rollover** (home region only): every period whose end plus ``windows.grace_s`` has passed on the
  worker's clock begins closing (and once the whole board is closing, its current period too): its row is made CLOSING in ``board_periods``. From there every
  region's worker closes it exactly as it closes a board (``LifecycleWorker.step``), as the board
  ``<board>@<key>``: cutoff markers into each of its awards partitions, then in the home region the
  drain to every (region, partition)'s cutoff, the chunked archive as result version 1, CLOSED. The
  intakes refuse the period's awards from the same moment on their own clocks (409
  ``period_closed``); one accepted before and landing after a cutoff is late (reconciliation).
- **Expiry** (home region only): when a local day leaves a rolling board's window, an expiry
  marker (``schema.windows``) goes into every partition of this region's awards topic, then the
  catalog records it; the markers replicate like awards, and every region's processor drops the
  expired days from the players that have points in them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from aiokafka import AIOKafkaProducer

from regions.core.boards import BoardStatus
from regions.core.periods import WindowSpec, day_key
from regions.core.rollover import current_period, expiry_due, periods_to_close
from regions.stores.cassandra.lifecycle import CloseRecord
from regions.stores.cassandra.periods import CassandraPeriods, PeriodRecord, WindowedBoard
from schema.records import Codec
from schema.windows import ExpiryMarker, expiry_key

log = logging.getLogger(__name__)
RECENT_PERIODS = 20  # period rows read per board and pass: the closes in progress are among the newest
PERIODS_PER_PASS = 10  # periods one pass begins closing per board (a board created long ago catches up)
_encode = Codec().encode
T = TypeVar("T")


class Worker(Protocol):
    """What the time windows need of the lifecycle worker (``regions.lifecycle.loop``)."""

    @property
    def region(self) -> str:
        """The worker's region: it rolls over and expires the boards homed here."""

    @property
    def grace_ms(self) -> int:
        """How long after its end a period begins closing."""

    @property
    def awards_topic(self) -> str:
        """This region's awards topic, where expiry markers go."""

    def now_ms(self) -> int:
        """The worker's time (its clock, plus ``windows.clock_offset_s`` in tests)."""

    async def guarded(self, what: str, step: Coroutine[Any, Any, T]) -> T | None:
        """Run ``step`` and return what it returns; its failure is logged (None), and tried again next
        pass."""

    async def step(
        self,
        closes: CassandraPeriods,
        record: CloseRecord,
        producer: AIOKafkaProducer,
        partitions: list[int],
        required: frozenset[str],
    ) -> None:
        """Take the next step of a close (here a period's, recorded in ``closes``)."""


async def tick(
    worker: Worker,
    periods: CassandraPeriods,
    producer: AIOKafkaProducer,
    partitions: list[int],
    required: frozenset[str],
    boards: list[WindowedBoard],
) -> bool:
    """One pass over every windowed board; whether any has work in progress (a period closing, days
    expiring) or failed, so the next pass comes soon."""
    busy = False
    for entry in boards:
        spec = entry.board.window_spec
        if spec is None:
            continue
        if spec.rolling:
            if entry.board.home_region == worker.region and entry.board.status is BoardStatus.OPEN:
                expired = _expire(worker, periods, producer, partitions, entry, spec)
                busy = await worker.guarded(entry.board.id, expired) is not False or busy
            continue
        closing = _periods(worker, periods, producer, partitions, required, entry, spec)
        busy = await worker.guarded(entry.board.id, closing) is not False or busy
    return busy


async def _periods(
    worker: Worker,
    periods: CassandraPeriods,
    producer: AIOKafkaProducer,
    partitions: list[int],
    required: frozenset[str],
    entry: WindowedBoard,
    spec: WindowSpec,
) -> bool:
    """Begin closing the periods that are due, and step those closing; whether any is closing."""
    board = entry.board
    recent = await periods.recent(board.id, RECENT_PERIODS)
    if board.home_region == worker.region:
        now = worker.now_ms()
        until = now
        if board.status is not BoardStatus.OPEN:  # the whole board closes: its current period with it
            until = max(now, current_period(spec, now).end_ms + worker.grace_ms)
        due = periods_to_close(spec, newest_key=recent[0].key if recent else None,
                               created_at_ms=entry.created_at_ms or now, now_ms=until,
                               grace_ms=worker.grace_ms, limit=PERIODS_PER_PASS)  # fmt: skip
        for span in due:
            if await periods.begin(board.id, span, datetime.fromtimestamp(now / 1000, UTC)):
                log.info("%s: period %s ended; closing it", board.id, span.key)
        if due:
            recent = await periods.recent(board.id, RECENT_PERIODS)
    closing = [period for period in reversed(recent) if period.status is BoardStatus.CLOSING]  # oldest first
    for period in closing:
        await worker.step(periods, _close_record(entry, period), producer, partitions, required)
    return bool(closing)


def _close_record(entry: WindowedBoard, period: PeriodRecord) -> CloseRecord:
    return CloseRecord(
        board=entry.board.for_period(period.key), closing_at_ms=period.closing_at_ms,
        close_reason=f"period {period.key} ended", markers=period.markers,
    )  # fmt: skip


async def _expire(
    worker: Worker,
    periods: CassandraPeriods,
    producer: AIOKafkaProducer,
    partitions: list[int],
    entry: WindowedBoard,
    spec: WindowSpec,
) -> bool:
    """Write the expiry markers of the days that left the window, if any; whether there were."""
    board = entry.board
    through = expiry_due(spec, entry.expired_through, worker.now_ms())
    if through is None:
        return False
    marker = ExpiryMarker(board_id=board.id, region=worker.region, expired_through=through,
                          aggregation=board.aggregation.value, sort_order=board.sort_order.value,
                          tie_policy=board.tie_policy.value, window=board.window or "",
                          written_at_ms=worker.now_ms(), shards=board.shards)  # fmt: skip
    topic, key, value = worker.awards_topic, expiry_key(board.id), _encode(marker)
    await asyncio.gather(*(producer.send_and_wait(topic, value, key=key, partition=p) for p in partitions))
    await periods.record_expiry(board.id, through)
    log.info("%s: days up to %s left the rolling window (expiry markers in %d partitions)",
             board.id, day_key(through), len(partitions))  # fmt: skip
    return True
