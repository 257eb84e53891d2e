"""Caps on read arguments; a value outside its bounds is a user-facing error message."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReadLimits:
    max_top_k: int
    max_context_range: int
    max_listed_players: int = 100
    max_followed_players: int = 50

    def check_k(self, k: int) -> str | None:
        """None when ``k`` is allowed, else the message naming the limit."""
        if 1 <= k <= self.max_top_k:
            return None
        return f"k must be between 1 and {self.max_top_k}, got {k}"

    def check_range(self, around: int) -> str | None:
        if 0 <= around <= self.max_context_range:
            return None
        return f"range must be between 0 and {self.max_context_range}, got {around}"

    def check_players(self, argument: str, count: int, most: int) -> str | None:
        """None when a list of ``count`` player ids is allowed (at most ``most``)."""
        if count <= most:
            return None
        return f"{argument} must list at most {most} players, got {count}"
