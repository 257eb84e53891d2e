"""Which tasks a processor instance owns, kept equal to the consumer group's assignment.

A task new to the instance is taken over (its earlier owners fenced, its store restored: minutes for
a large partition) outside the rebalance callback, its source partitions paused meanwhile, so the
consumer goes on polling and the group stays stable however long a restore takes; ``adopt`` then
makes it owned. A task no longer assigned is released (its store closed, its producer stopped), a
takeover no longer assigned too, whether it is still under way or finished and not yet adopted.
What a takeover found is reported only once its task is adopted (``on_adopted``), so a takeover
that is dropped and made again reports it once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from regions.core.resume import Gap
from regions.processor.restore import Restored
from regions.stores.task_state import TaskStore

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class OwnedTask:
    """Partition p of every source, owned here: the producer that fences its earlier owners, its
    store, and the offset each source partition continues from."""

    partition: int
    producer: AIOKafkaProducer
    store: TaskStore
    next_offsets: dict[TopicPartition, int]
    restored: Restored
    committed_at: float = 0.0
    remembered: int = 0  # copies the dedupe memory holds (approximate: restored records, then counted)
    held: dict[TopicPartition, list[ConsumerRecord]] = field(default_factory=dict)
    """Records fetched and not yet folded: heartbeats only, waiting for the task's next round."""
    held_since: float = 0.0  # when the oldest of ``held`` was fetched (the event loop's clock)
    deleted: dict[TopicPartition, Gap] = field(default_factory=dict)
    """Source records retention deleted unread, not yet counted into a position (reported once the
    task is adopted when its takeover found them, at once when a round did)."""


Takeover = Callable[[AIOKafkaConsumer, int], Coroutine[Any, Any, OwnedTask]]
"""Takes the task of a partition over: fences its earlier owners, restores its store, finds its offsets."""


class TaskOwnership:
    """The owned tasks and the takeovers under way. ``lock`` is held while ownership changes and
    while a round's transactions run, so a task is never handed over in the middle of a transaction."""

    def __init__(self, takeover: Takeover, on_adopted: Callable[[OwnedTask], None] = lambda task: None) -> None:
        self._takeover = takeover
        self._on_adopted = on_adopted
        self.owned: dict[int, OwnedTask] = {}
        # Tasks being taken over outside the rebalance callback: their source partitions stay paused
        # until they are owned, and the consumer keeps polling meanwhile.
        self._acquiring: dict[int, asyncio.Task[OwnedTask]] = {}
        self.restored = asyncio.Event()  # every assigned task is owned
        self.lock = asyncio.Lock()
        self.rebalancing = True
        self._failure: BaseException | None = None

    def begin(self) -> None:
        """A new membership of the group: nothing is owned yet, no failure is known."""
        self.restored.clear()
        self._failure = None

    def raise_failure(self) -> None:
        """Raise the failure ``take`` met, if any (the rebalance listener could only log it)."""
        if self._failure is not None:
            raise self._failure

    async def take(self, consumer: AIOKafkaConsumer, assigned: Iterable[TopicPartition]) -> None:
        """Own exactly the tasks of ``assigned``: release the others, acquire the new ones, and
        continue each source partition from where its task stands. The consumer only logs a
        listener's exception, so a failure is kept for ``raise_failure``."""
        try:
            await self._take(consumer, assigned)
        except Exception as exc:
            self._failure = exc

    async def _take(self, consumer: AIOKafkaConsumer, assigned: Iterable[TopicPartition]) -> None:
        """Release what is no longer assigned and start taking over what is new (``adopt`` finishes it)."""
        async with self.lock:
            assigned = list(assigned)
            wanted = {tp.partition for tp in assigned}
            for partition in [p for p in self.owned if p not in wanted]:
                await self._release(self.owned.pop(partition))
            for partition in [p for p in self._acquiring if p not in wanted]:
                await self._drop(self._acquiring.pop(partition))
            for partition in sorted(p for p in wanted if p not in self.owned and p not in self._acquiring):
                self._acquiring[partition] = asyncio.create_task(self._takeover(consumer, partition))
            for tp in assigned:
                if tp.partition in self._acquiring:
                    consumer.pause(tp)
                else:
                    # A task kept across the rebalance keeps its store: if anyone owned it meanwhile, they
                    # fenced this producer, the next commit fails, and the rerun replays their changes.
                    # Records it held unfolded are fetched again from there.
                    kept = self.owned[tp.partition]
                    kept.held.pop(tp, None)
                    consumer.seek(tp, kept.next_offsets[tp])
            self.rebalancing = False
            self._settled()

    async def adopt(self, consumer: AIOKafkaConsumer) -> None:
        """Own the tasks whose takeover finished: continue each of their source partitions from where
        the task stands. A takeover that failed is raised (the process reruns)."""
        done = [p for p, t in self._acquiring.items() if t.done()]
        if not done:
            return
        async with self.lock:
            if self.rebalancing:
                return  # the next assignment says whether they are still this instance's
            for partition in done:
                acquiring = self._acquiring.pop(partition, None)
                if acquiring is None or acquiring.cancelled():
                    continue
                task = acquiring.result()  # raises the takeover's failure
                self.owned[partition] = task
                for tp, offset in task.next_offsets.items():
                    consumer.seek(tp, offset)
                    consumer.resume(tp)
                self._on_adopted(task)
            self._settled()

    async def settle(self, consumer: AIOKafkaConsumer) -> None:
        """Until every takeover under way has ended and its task is owned."""
        await asyncio.gather(*self._acquiring.values(), return_exceptions=True)
        await self.adopt(consumer)

    def _settled(self) -> None:
        if not self._acquiring and not self.rebalancing:
            self.restored.set()
            log.info("owning partitions %s", sorted(self.owned))

    @staticmethod
    async def _release(task: OwnedTask) -> None:
        task.store.close()
        await task.producer.stop()

    async def _drop(self, acquiring: asyncio.Task[OwnedTask]) -> None:
        """End a takeover that is no longer wanted: one under way closes its store and producer as it is
        cancelled; one that finished holds them, and gives them back here."""
        acquiring.cancel()
        (outcome,) = await asyncio.gather(acquiring, return_exceptions=True)
        if isinstance(outcome, OwnedTask):
            await self._release(outcome)

    async def pause(self) -> None:
        """Stop processing until the next assignment, once the round in flight has committed."""
        async with self.lock:
            self.rebalancing = True
            self.restored.clear()

    async def close(self) -> None:
        """Release every task (stores closed, producers stopped), and end the takeovers under way."""
        async with self.lock:
            for acquiring in self._acquiring.values():
                await self._drop(acquiring)
            self._acquiring.clear()
            for task in self.owned.values():
                await self._release(task)
            self.owned.clear()
