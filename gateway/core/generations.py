"""Per-board change stamps for the gateway's caches, in bounded memory.

A cached answer records the generation of every board it read and is reused only while each
board's generation is unchanged. Generations are stamps from one process-wide counter, so a board's
next stamp is always new; only the ``max_boards`` most recently changed boards keep their own stamp.
A board forgotten to make room answers the highest stamp forgotten so far (the floor), which is at
least its own last stamp: an answer read after its last change may still match, and one read
before it never does. So forgetting costs at most a cache miss, never a stale answer, and the
memory stays bounded however many boards (a new period board every day) change.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass(slots=True)
class BoardGenerations:
    max_boards: int = 10_000
    _stamps: OrderedDict[str, int] = field(default_factory=OrderedDict)
    _last: int = 0
    _floor: int = 0

    def __post_init__(self) -> None:
        if self.max_boards < 1:
            raise ValueError(f"max_boards {self.max_boards}: must be at least 1")

    def of(self, board_id: str) -> int:
        """The board's generation: changes whenever ``changed`` is called for it, and only then."""
        return self._stamps.get(board_id, self._floor)

    def changed(self, board_id: str) -> None:
        """The board changed: answers read before now no longer match its generation."""
        self._last += 1
        self._stamps[board_id] = self._last
        self._stamps.move_to_end(board_id)
        while len(self._stamps) > self.max_boards:
            _, stamp = self._stamps.popitem(last=False)
            self._floor = max(self._floor, stamp)

    def __len__(self) -> int:
        return len(self._stamps)
