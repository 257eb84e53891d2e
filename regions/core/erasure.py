"""Erasing a player's rows (a deleted account): what each store reports, and the pure rules of
taking a player out of an archived result. Pure: no I/O, no clock.

- ``ErasureStep``: one per store erased ("award_history", "profiles", "archives"), DONE or FAILED
  with what was touched or the error. Erasing again after DONE touches nothing and is DONE again.
- ``closed_up``: a result without the player, ranks closed up. It also drops a repeated player, so
  a version whose chunks were rewritten only in part (a crash mid-rewrite leaves one entry in two
  adjacent chunks) comes out right when erased again: the rewrite is safe to repeat.
- An erasure publishes its result version through ``board_corrections`` like a correction, under
  ``erasure_id``: a one-way digest, so that table never holds the user id, yet an interrupted
  erasure finds the version it claimed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from regions.core.results import ResultEntry

ERASURE_PREFIX = "erasure:"
ERASURE_REASON = "erasure"
ERASED_STORES = ("award_history", "profiles", "archives")


class ErasureStatus(StrEnum):
    DONE = "DONE"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class ErasureStep:
    """What erasing the player did in one store: ``detail`` counts what was touched, or says the
    error and what to do next."""

    store: str
    status: str  # an ErasureStatus
    detail: str


def erasure_id(board_id: str, user_id: str, base_version: int) -> str:
    """The correction id of the version that erases ``user_id`` from ``base_version`` of the board."""
    digest = hashlib.sha256(f"{board_id}\x00{base_version}\x00{user_id}".encode()).hexdigest()[:32]
    return f"{ERASURE_PREFIX}{digest}"


def is_erasure(correction_id: str) -> bool:
    """Whether a correction's version is an erasure's (published by the erasure, not the worker)."""
    return correction_id.startswith(ERASURE_PREFIX)


def closed_up(entries: Iterable[ResultEntry], user_id: str) -> list[ResultEntry]:
    """The entries in rank order without ``user_id`` and without a player seen already."""
    seen: set[str] = set()
    kept = []
    for entry in entries:
        if entry.user_id != user_id and entry.user_id not in seen:
            seen.add(entry.user_id)
            kept.append(entry)
    return kept


def needs_rewrite(entries: list[ResultEntry], user_id: str) -> bool:
    """Whether a version's entries hold the player, or a player twice (an interrupted rewrite)."""
    return len(closed_up(entries, user_id)) != len(entries)


def in_chunks(entries: list[ResultEntry], size: int) -> list[tuple[int, list[ResultEntry]]]:
    """(chunk number, entries) of a result: chunk ``i`` holds ranks ``i*size+1 .. (i+1)*size``."""
    return [(i // size, entries[i : i + size]) for i in range(0, len(entries), size)]
