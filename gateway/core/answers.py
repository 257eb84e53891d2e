"""Whole GraphQL answers reused for a short time: hot top-K pages are the same bytes for everyone.

An answer is reused only while it is younger than the TTL and no board it read has changed since
(each hint bumps the board's generation). It carries its own asOf, so reuse never misstates what it
reflects. The caller decides what is cacheable (queries on boards, no errors, no credentials).
The cache is bounded by bytes (keys are whole request bodies, answers can be large), then by
count; the least recently used answer goes first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Answer:
    made_at: float
    generations: Mapping[str, int]  # board -> generation when the answer was read
    body: bytes


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
        answer = self._entries.get(key)
        if answer is None:
            return None
        fresh = now - answer.made_at < self.ttl_s
        if fresh and all(generation(b) == g for b, g in answer.generations.items()):
            self._entries.move_to_end(key)
            return answer.body
        self._drop(key)
        return None

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
