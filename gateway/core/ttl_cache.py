"""A small bounded cache whose entries expire after a fixed time; the caller passes the time."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


@dataclass(slots=True)
class TtlCache(Generic[K, V]):
    ttl_s: float
    max_entries: int = 1024
    _entries: OrderedDict[K, tuple[float, V]] = field(default_factory=OrderedDict)

    def get(self, key: K, now: float) -> V | None:
        hit = self._entries.get(key)
        if hit is None:
            return None
        if now - hit[0] >= self.ttl_s:
            del self._entries[key]
            return None
        return hit[1]

    def put(self, key: K, value: V, now: float) -> None:
        if self.ttl_s <= 0:
            return
        self._entries[key] = (now, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
