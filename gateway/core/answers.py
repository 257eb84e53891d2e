"""Whole GraphQL answers reused for a short time: hot top-K pages are the same bytes for everyone.

An answer is reused only while it is younger than the TTL and no board it read has changed since
(each hint bumps the board's generation). It carries its own asOf, so reuse never misstates what it
reflects. The caller decides what is cacheable (queries on boards, no errors, no credentials).
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


@dataclass(slots=True)
class AnswerCache:
    ttl_s: float
    max_entries: int = 2048
    _entries: OrderedDict[bytes, Answer] = field(default_factory=OrderedDict)

    def get(self, key: bytes, now: float, generation: Callable[[str], int]) -> bytes | None:
        answer = self._entries.get(key)
        if answer is None:
            return None
        fresh = now - answer.made_at < self.ttl_s
        if fresh and all(generation(b) == g for b, g in answer.generations.items()):
            return answer.body
        del self._entries[key]
        return None

    def put(self, key: bytes, answer: Answer) -> None:
        if self.ttl_s <= 0:
            return
        self._entries[key] = answer
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
