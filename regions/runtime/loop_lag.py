"""How far behind this process's event loop runs: its queueing delay, the signal that a process is
over its CPU (more ready work than it gets done), which no count of work in flight can see, since
requests waiting to be read are not in flight yet.

A tick is scheduled every ``interval_s``; its lateness is how long after its time it ran. ``behind_ms``
is the *least* lateness over the last ``window`` ticks: the loop has been at least that far behind
for the whole window. One long callback or a pause of the process (a garbage collection, a busy
neighbour, a blocking call) makes one tick late, not all of them; an overload makes every tick late.
There is one watcher per event loop (``loop_lag``), however many parts of the process ask.

The watcher rests while nobody asks: after ``REST_AFTER_S`` without a read it stops ticking (an idle
process is not woken 200 times a second), and the next read wakes it with an empty window, so a
process that was idle counts as not behind until its window has filled again (100 ms).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque

INTERVAL_S = 0.005
WINDOW = 20  # ticks: 100 ms
REST_AFTER_S = 1.0

_watchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopLag] = weakref.WeakKeyDictionary()


class LoopLag:
    def __init__(
        self, interval_s: float = INTERVAL_S, window: int = WINDOW, rest_after_s: float = REST_AFTER_S
    ) -> None:
        self.interval_s = interval_s
        self.rest_after_s = rest_after_s
        self._window = window
        self._late: deque[float] = deque([0.0] * window, maxlen=window)
        self._read_at = time.monotonic()
        self._asked = asyncio.Event()
        self.resting = False

    @property
    def behind_ms(self) -> float:
        self._read_at = time.monotonic()
        self._asked.set()
        return min(self._late) * 1000

    def tick(self, lateness_s: float) -> None:
        self._late.append(max(0.0, lateness_s))

    async def watch(self) -> None:
        """Tick until cancelled, resting while nobody asks."""
        loop = asyncio.get_running_loop()
        while True:
            if time.monotonic() - self._read_at > self.rest_after_s:
                self._asked.clear()
                self.resting = True
                await self._asked.wait()
                self.resting = False
                self._late.extend([0.0] * self._window)
            due = loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.tick(loop.time() - due)


def loop_lag() -> LoopLag:
    """The running loop's watcher, started on first use."""
    loop = asyncio.get_running_loop()
    found = _watchers.get(loop)
    if found is None:
        found = _watchers[loop] = LoopLag()
        task = loop.create_task(found.watch())
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)
    return found


_tasks: set[asyncio.Task[None]] = set()  # the watchers' tasks, kept from the garbage collector
