"""The gateway process's count of GraphQL operations in flight over HTTP and the gate of live push,
under the rule of :mod:`gateway.core.admission` (``gateway.max_concurrent_operations``,
``reserved_for_mutations``, ``push_shed_at_operations``)."""

from __future__ import annotations

import asyncio

from gateway import metrics
from gateway.core.admission import OperationBounds
from regions.core.admission import Bound
from regions.runtime.loop_lag import loop_lag
from regions.runtime.settings import GatewaySettings


class Admission:
    def __init__(self, settings: GatewaySettings) -> None:
        self.bounds = OperationBounds(
            Bound(settings.max_concurrent_operations, settings.reserved_for_mutations),
            settings.push_shed_at_operations,
        )
        self.retry_after_s = settings.overload_retry_after_s
        self.max_behind_ms = settings.max_loop_behind_ms
        self.behind_ms: float | None = None  # how far behind the loop was when the last query was refused
        self.in_flight = 0
        self._push_open = asyncio.Event()
        self._push_open.set()

    def enter(self, mutation: bool) -> bool:
        """Count one more operation (then call :meth:`leave`); False when it must be refused: over the
        bound, or a query while the process runs behind its work."""
        self.behind_ms = None
        if not self.bounds.admits(self.in_flight, mutation):
            return False
        if not mutation and self.max_behind_ms and (behind := loop_lag().behind_ms) > self.max_behind_ms:
            self.behind_ms = behind
            return False
        self._moved(1)
        return True

    def leave(self) -> None:
        self._moved(-1)

    @property
    def pushing(self) -> bool:
        return self._push_open.is_set()

    async def push_turn(self) -> None:
        """Return once live push may go on."""
        await self._push_open.wait()

    def _moved(self, by: int) -> None:
        self.in_flight += by
        metrics.OPERATIONS_IN_FLIGHT.set(self.in_flight)
        if self.bounds.pushes(self.in_flight):
            self._push_open.set()
        elif self._push_open.is_set():
            self._push_open.clear()
            metrics.PUSH_SHED.inc()
