"""A Count-Min Sketch kept in blocks of counters: the memory of an approximate (trending) board.

Pure: no I/O, no clock. Invariants kept here (and property-tested):
- the shape depends only on (epsilon, delta): ``width = ceil(e / epsilon)`` counters per row and
  ``depth = ceil(ln(1 / delta))`` rows, whatever the number of items;
- an item's cell in each row is a keyed BLAKE2b of its id (the row is the salt), the same in every
  process and region (never Python's ``hash``, which is salted per process);
- counters only add, so the same set of counted amounts gives the same counters whatever the order
  they were added in: that is how sketches of the same distinct awards converge in every region;
- with non-negative amounts, an item's estimate (the least of its counters) is never below its true
  count, and exceeds it by more than ``epsilon x total`` with probability at most ``delta``.

Counters live in blocks of ``BLOCK`` consecutive counters of one row: a store keeps a block under
one key and a changelog carries a touched block's absolute counters once per transaction.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

BLOCK = 64
"""Counters per block: a changed block costs one key in the store and one changelog record."""
_PERSON = b"lb-cms-v1"

BlockKey = tuple[int, int]  # (row, block index)
Counters = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Shape:
    width: int
    depth: int

    @classmethod
    def of(cls, epsilon: float, delta: float) -> Shape:
        """The smallest sketch with error at most ``epsilon x total`` with probability 1 - ``delta``."""
        if not 0 < epsilon < 1 or not 0 < delta < 1:
            raise ValueError(f"epsilon and delta must be in (0, 1), got {epsilon} and {delta}")
        return cls(math.ceil(math.e / epsilon), math.ceil(math.log(1 / delta)))

    @property
    def blocks_per_row(self) -> int:
        return -(-self.width // BLOCK)

    def block_size(self, block: int) -> int:
        """Counters in block ``block`` of a row (the last block of a row may be shorter)."""
        return min(BLOCK, self.width - block * BLOCK)

    def columns(self, item: str) -> tuple[int, ...]:
        """The item's column in each row."""
        data = item.encode()
        return tuple(
            int.from_bytes(
                hashlib.blake2b(data, digest_size=8, salt=row.to_bytes(8, "big"), person=_PERSON).digest(),
                "big",
            )
            % self.width
            for row in range(self.depth)
        )


@dataclass(slots=True, eq=False)
class Sketch:
    """A sketch's counters read through ``load`` (a store's block, None: all zero) with the changes
    made since kept in ``changed``: what a round sends and stores once its transaction committed."""

    shape: Shape
    load: Callable[[BlockKey], Counters | None]
    changed: dict[BlockKey, list[int]] = field(default_factory=dict)
    _read: dict[BlockKey, Counters] = field(default_factory=dict)

    def _block(self, key: BlockKey) -> Counters | list[int]:
        known = self.changed.get(key)
        if known is not None:
            return known
        read = self._read.get(key)
        if read is None:
            read = self.load(key) or (0,) * self.shape.block_size(key[1])
            self._read[key] = read
        return read

    def add(self, item: str, amount: int) -> int:
        """Count ``amount`` more for ``item``; returns its estimate after."""
        least: int | None = None
        for row, column in enumerate(self.shape.columns(item)):
            key = (row, column // BLOCK)
            block = self.changed.get(key)
            if block is None:
                block = self.changed[key] = list(self._block(key))
            block[column % BLOCK] += amount
            value = block[column % BLOCK]
            least = value if least is None or value < least else least
        return least or 0

    def estimate(self, item: str) -> int:
        """The least of the item's counters: never below its true count (amounts >= 0)."""
        return min(
            self._block((row, c // BLOCK))[c % BLOCK] for row, c in enumerate(self.shape.columns(item))
        )

    def changed_blocks(self) -> dict[BlockKey, Counters]:
        """The absolute counters of every block changed so far."""
        return {key: tuple(block) for key, block in self.changed.items()}


def error_bound(epsilon: float, total: int) -> int:
    """The most an estimate exceeds the true count (with the sketch's probability): epsilon x total."""
    return math.ceil(epsilon * total)
