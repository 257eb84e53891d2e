"""Caps on read arguments; a value outside its bounds is a user-facing error message."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReadLimits:
    max_top_k: int
    max_context_range: int

    def check_k(self, k: int) -> str | None:
        """None when ``k`` is allowed, else the message naming the limit."""
        if 1 <= k <= self.max_top_k:
            return None
        return f"k must be between 1 and {self.max_top_k}, got {k}"

    def check_range(self, around: int) -> str | None:
        if 0 <= around <= self.max_context_range:
            return None
        return f"range must be between 0 and {self.max_context_range}, got {around}"
