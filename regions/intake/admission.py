"""The intake's admission control: the awards held between reading a request and Kafka's
acknowledgement, counted per process and bounded by ``intake.max_in_flight_awards`` (the rule is
``regions.core.admission.Bound``; this counts, and queues those allowed to wait,
``intake.admission_wait_s``, in arrival order), a bound lowered while acknowledgements take longer
than ``intake.ack_target_ms`` (``regions.core.admission.AckTarget``); and how far behind the
process's event loop runs (``regions.runtime.loop_lag``), bounded by ``intake.max_loop_behind_ms``:
requests that queue before they are read are in flight nowhere, and only the loop's delay shows them."""

from __future__ import annotations

import asyncio
import time
from collections import deque

from regions.core.admission import AckTarget, Bound
from regions.runtime.loop_lag import loop_lag
from regions.runtime.metrics import INTAKE_IN_FLIGHT, INTAKE_IN_FLIGHT_LIMIT

_Waiter = tuple[int, "asyncio.Future[None]"]


class AwardAdmission:
    def __init__(self, limit: int, wait_s: float, max_behind_ms: float = 0, ack_target_ms: float = 0) -> None:
        self.bound = Bound(limit)
        self.wait_s = wait_s
        self.max_behind_ms = max_behind_ms
        self.in_flight = 0
        self._waiters: deque[_Waiter] = deque()
        self._target = AckTarget(limit, ack_target_ms / 1000) if ack_target_ms else None
        INTAKE_IN_FLIGHT_LIMIT.set(limit)

    def full(self) -> bool:
        """No award could start now and none may wait: the request is refused before it is read."""
        return self.wait_s == 0 and self.bound.full(self.in_flight)

    def why_full(self) -> str:
        """Why an award finds no room: the bound now, and where it comes from."""
        limit = self.bound.limit
        if self._target is None:
            return f"holds as many awards in flight as it may (intake.max_in_flight_awards = {limit})"
        return (f"holds as many awards in flight as it may now ({limit}; intake.max_in_flight_awards = "
                f"{self._target.ceiling}, lowered while Kafka acknowledges slower than intake.ack_target_ms "
                f"= {self._target.target_s * 1000:g})")  # fmt: skip

    def why_behind(self, behind_ms: float) -> str:
        return f"is {behind_ms:.0f} ms behind its work, over intake.max_loop_behind_ms = {self.max_behind_ms:g}"

    def behind(self) -> float | None:
        """How far behind the event loop runs (ms), when that is over the bound: the request is
        refused before it is read; None otherwise."""
        if not self.max_behind_ms:
            return None
        behind = loop_lag().behind_ms
        return behind if behind > self.max_behind_ms else None

    async def enter(self, awards: int) -> bool:
        """Hold ``awards`` in flight (then call :meth:`leave`); False when refused, holding nothing."""
        if not self._waiters and self.bound.admits(self.in_flight, awards):
            self._take(awards)
            return True
        if self.wait_s == 0:
            return False
        waiter: _Waiter = (awards, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        try:
            await asyncio.wait((waiter[1],), timeout=self.wait_s)
        except asyncio.CancelledError:
            self._give_up(waiter)
            raise
        if waiter[1].done():
            return True
        self._give_up(waiter)
        return False

    def leave(self, awards: int, acknowledged_after_s: float | None = None) -> None:
        """Release ``awards``; ``acknowledged_after_s``: Kafka acknowledged them, that long after they
        were admitted (the bound follows it)."""
        self.in_flight -= awards
        INTAKE_IN_FLIGHT.set(self.in_flight)
        if self._target is not None and acknowledged_after_s is not None:
            limit = self._target.acknowledged(acknowledged_after_s, time.monotonic())
            if limit is not None:
                self.bound = Bound(limit)
                INTAKE_IN_FLIGHT_LIMIT.set(limit)
        self._wake()

    def _take(self, awards: int) -> None:
        self.in_flight += awards
        INTAKE_IN_FLIGHT.set(self.in_flight)
        if self._target is not None:
            self._target.in_flight(self.in_flight)

    def _wake(self) -> None:
        """Admit waiters in arrival order while the first one fits (the room it holds was given it)."""
        while self._waiters and self.bound.admits(self.in_flight, self._waiters[0][0]):
            awards, admitted = self._waiters.popleft()
            self._take(awards)
            admitted.set_result(None)

    def _give_up(self, waiter: _Waiter) -> None:
        if waiter[1].done():  # admitted as it gave up: the room goes back
            self.leave(waiter[0])
            return
        waiter[1].cancel()
        self._waiters.remove(waiter)
        self._wake()  # it may have held back smaller waiters behind it
