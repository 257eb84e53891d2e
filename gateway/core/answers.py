"""Whole GraphQL answers reused for a short time: hot top-K pages are the same bytes for everyone.

An answer is reused only while it is younger than the TTL and no board it read has changed since
(each hint bumps the board's generation). It carries its own asOf, so reuse never misstates what it
reflects. The caller decides what is cacheable (queries on boards, no errors, no credentials).
The cache is bounded by bytes (keys are whole request bodies, answers can be large), then by
count; the least recently used answer goes first.

Identical reads that arrive while one of them is being answered wait for that answer
(:class:`Flights`) rather than each reading the boards again: when a hot answer expires, the
requests that find it gone read once, not once each. The waiting requests take the answer under
the cache's rule (no board it read has changed since it was read), else read on their own. While
an expired answer is being read again, identical requests get the expired one if no board it read
has changed since and it is less than twice the TTL old (:meth:`AnswerCache.stale`): a hot page
then never waits for the read that renews it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Answer:
    made_at: float
    generations: Mapping[str, int]  # board -> generation when the answer was read
    body: bytes

    def current(self, generation: Callable[[str], int]) -> bool:
        """Whether no board the answer read has changed since (``generation``: a board's now)."""
        return all(generation(b) == g for b, g in self.generations.items())


def _size(key: bytes, answer: Answer) -> int:
    return len(key) + len(answer.body)


@dataclass(slots=True)
class AnswerCache:
    ttl_s: float
    max_bytes: int = 16 << 20
    max_entries: int = 2048
    _entries: OrderedDict[bytes, Answer] = field(default_factory=OrderedDict)
    _bytes: int = 0

    def get(self, key: bytes, now: float, generation: Callable[[str], int]) -> bytes | None:
        """The answer of ``key`` younger than the TTL, of boards unchanged since it was read."""
        answer = self._entries.get(key)
        if answer is None:
            return None
        if not answer.current(generation):
            self._drop(key)
            return None
        if now - answer.made_at >= self.ttl_s:
            return None  # kept for stale() while it is read again
        self._entries.move_to_end(key)
        return answer.body

    def stale(self, key: bytes, now: float, generation: Callable[[str], int]) -> bytes | None:
        """The expired answer of ``key``, of boards unchanged since it was read and less than twice
        the TTL old: what identical requests get while one of them reads it again."""
        answer = self._entries.get(key)
        if answer is None or now - answer.made_at >= 2 * self.ttl_s or not answer.current(generation):
            return None
        return answer.body

    def put(self, key: bytes, answer: Answer) -> None:
        if self.ttl_s <= 0 or _size(key, answer) > self.max_bytes:
            return
        self._drop(key)
        self._entries[key] = answer
        self._bytes += _size(key, answer)
        while self._bytes > self.max_bytes or len(self._entries) > self.max_entries:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: bytes) -> None:
        answer = self._entries.pop(key, None)
        if answer is not None:
            self._bytes -= _size(key, answer)

    @property
    def bytes(self) -> int:
        """Bytes held: keys and answers."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


Flight = asyncio.Future[Answer | None]  # an identical read being answered: its answer, None if none


class Flights:
    """The cacheable reads being answered, by key: the first request of a key leads (reads), the
    identical requests that arrive meanwhile wait for its answer."""

    def __init__(self) -> None:
        self._flying: dict[bytes, Flight] = {}

    def flying(self, key: bytes) -> Flight | None:
        """The read of ``key`` being answered, if any."""
        return self._flying.get(key)

    def lead(self, key: bytes) -> Flight | None:
        """A new flight of ``key`` that the caller leads, or None when another request leads one."""
        if key in self._flying:
            return None
        flight: Flight = asyncio.get_running_loop().create_future()
        self._flying[key] = flight
        return flight

    def land(self, key: bytes, flight: Flight, answer: Answer | None) -> None:
        """The leader's answer (None: not reusable) to the requests waiting for ``flight``."""
        if self._flying.get(key) is flight:
            del self._flying[key]
        if not flight.done():
            flight.set_result(answer)

    def __len__(self) -> int:
        return len(self._flying)
