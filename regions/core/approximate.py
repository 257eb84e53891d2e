"""The settings of an approximate (trending) board: keep its best k by a Count-Min Sketch.

Pure values. ``k`` is the most a read asks for, ``epsilon`` and ``delta`` size the sketch
(``regions.core.sketch.Shape.of``): an estimate exceeds the true count by more than epsilon x the
board's total with probability at most delta. The catalog, and every award the intake stamps, keep
them as the text ``k,epsilon,delta``.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_K = 1000
MAX_EPSILON = 0.1
MAX_DELTA = 0.5
CANDIDATES_PER_K = 2
"""Candidates a partition keeps per k read (``regions.core.candidates``)."""


class InvalidApproximate(ValueError):
    """Approximate settings that break a rule; the message names the field and the rule."""


@dataclass(frozen=True, slots=True)
class ApproximateSpec:
    k: int
    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        if not 1 <= self.k <= MAX_K:
            raise InvalidApproximate(f"approximate.k: must be 1..{MAX_K}, got {self.k}")
        if not 0 < self.epsilon <= MAX_EPSILON:
            raise InvalidApproximate(
                f"approximate.epsilon: must be in (0, {MAX_EPSILON}], got {self.epsilon}"
            )
        if not 0 < self.delta <= MAX_DELTA:
            raise InvalidApproximate(f"approximate.delta: must be in (0, {MAX_DELTA}], got {self.delta}")

    @property
    def capacity(self) -> int:
        """Candidates kept per partition."""
        return CANDIDATES_PER_K * self.k


def encode_approximate(spec: ApproximateSpec | None) -> str:
    """The catalog's (and the award's) text of the settings: ``k,epsilon,delta``; empty: exact."""
    return "" if spec is None else f"{spec.k},{spec.epsilon!r},{spec.delta!r}"


def decode_approximate(text: str | None) -> ApproximateSpec | None:
    """The settings of a stored text; None for an exact board. ``InvalidApproximate`` when malformed."""
    if not text:
        return None
    parts = text.split(",")
    try:
        k, epsilon, delta = int(parts[0]), float(parts[1]), float(parts[2])
    except (ValueError, IndexError) as exc:
        raise InvalidApproximate(f"approximate: {text!r} is not k,epsilon,delta") from exc
    if len(parts) != 3:
        raise InvalidApproximate(f"approximate: {text!r} is not k,epsilon,delta")
    return ApproximateSpec(k, epsilon, delta)
