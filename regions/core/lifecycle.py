"""A board's lifecycle as a pure state machine: OPEN -> CLOSING -> CLOSED.

Pure: no I/O, no clock (times are arguments, in ms). The adapters change the catalog only along
``TRANSITIONS`` (with lightweight transactions), and the lifecycle worker of each region asks
:func:`next_step` what to do for a closing board.

The close is a barrier, kept by these rules:
- a board leaves OPEN once, to CLOSING, and never goes back; CLOSING leaves only to CLOSED;
- every region writes a cutoff marker into each of its awards partitions, but not before
  ``closing_at + marker_delay``: its intakes may accept the board for a catalog TTL after CLOSING, and
  an accepted award may take a delivery timeout to land; waiting lets those land before the marker;
- the first marker of a board in a (region, partition) is its cutoff; an award of the board after it
  in that stream is late (never applied);
- only the home region archives, and only once the cutoff of every (region, partition) is reached;
  the board is CLOSED only after its result version 1 is complete.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from regions.core.boards import BoardStatus

MAX_REASON = 500  # characters of a close's or a correction's reason

TRANSITIONS: Mapping[BoardStatus, frozenset[BoardStatus]] = {
    BoardStatus.OPEN: frozenset({BoardStatus.CLOSING}),
    BoardStatus.CLOSING: frozenset({BoardStatus.CLOSED}),
    BoardStatus.CLOSED: frozenset(),
}


class IllegalTransition(ValueError):
    """A status change the lifecycle does not allow; the message names both states."""


def check_transition(current: BoardStatus, target: BoardStatus) -> None:
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "nothing"
        raise IllegalTransition(f"a {current} board cannot become {target} (it may become: {allowed})")


@dataclass(frozen=True, slots=True)
class BeginClose:
    """The board is OPEN: move it to CLOSING now."""


@dataclass(frozen=True, slots=True)
class AlreadyClosing:
    """The board is CLOSING or CLOSED already: a repeated close answers it as it is."""

    status: BoardStatus


def close_request(status: BoardStatus) -> BeginClose | AlreadyClosing:
    """What closing a board of ``status`` means: idempotent past OPEN."""
    return BeginClose() if status is BoardStatus.OPEN else AlreadyClosing(status)


def position_name(region: str, partition: int) -> str:
    """How a (region, partition) is named in cutoffs and positions: ``<region>:<partition>``."""
    return f"{region}:{partition}"


def parse_position_name(name: str) -> tuple[str, int]:
    """(region, partition) of a ``<region>:<partition>`` name; ValueError when it is not one."""
    region, _, partition = name.rpartition(":")
    if not region or not partition.isdigit():
        raise ValueError(f"position {name!r} is not <region>:<partition>")
    return region, int(partition)


def required_cutoffs(regions: Iterable[str], partitions: int) -> frozenset[str]:
    """Every (region, partition) whose cutoff the home region must reach before it archives."""
    return frozenset(position_name(r, p) for r in regions for p in range(partitions))


def first_cutoff(known: int | None, offset: int) -> int:
    """The cutoff after a marker at ``offset``: the first marker of a stream stays the cutoff."""
    return offset if known is None else known


def is_late(cutoff: int | None, offset: int) -> bool:
    """An award at ``offset`` of a stream whose cutoff is ``cutoff`` comes after the close barrier."""
    return cutoff is not None and offset > cutoff


@dataclass(frozen=True, slots=True)
class CloseProgress:
    """What the catalog and the home projection say about a board's close."""

    board_id: str
    home_region: str
    status: BoardStatus
    closing_at_ms: int | None = None
    markers: frozenset[str] = frozenset()  # regions that wrote their cutoff markers
    reached: Mapping[str, int] = field(default_factory=dict)  # cutoffs reached by the home projection


@dataclass(frozen=True, slots=True)
class WriteMarkers:
    """Write this region's cutoff marker into each of its awards partitions, then record it."""


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """Nothing to do before ``at_ms`` (the markers' delay has not passed)."""

    at_ms: int


@dataclass(frozen=True, slots=True)
class AwaitCutoffs:
    """The home projection has not reached these cutoffs yet (``<region>:<partition>``)."""

    missing: frozenset[str]


@dataclass(frozen=True, slots=True)
class Archive:
    """Every cutoff is reached: archive the final standings as result version 1, record the
    cutoffs, and set CLOSED."""

    cutoffs: dict[str, int]


@dataclass(frozen=True, slots=True)
class Idle:
    """Nothing for this region to do for the board."""


Step = WriteMarkers | WaitUntil | AwaitCutoffs | Archive | Idle


def next_step(
    progress: CloseProgress, *, region: str, required: frozenset[str], now_ms: int, marker_delay_ms: int
) -> Step:
    """What region ``region``'s lifecycle worker does next for a board."""
    if progress.status is not BoardStatus.CLOSING or progress.closing_at_ms is None:
        return Idle()
    if region not in progress.markers:
        due = progress.closing_at_ms + marker_delay_ms
        return WriteMarkers() if now_ms >= due else WaitUntil(due)
    if region != progress.home_region:
        return Idle()
    missing = required - progress.reached.keys()
    if missing:
        return AwaitCutoffs(frozenset(missing))
    return Archive({name: progress.reached[name] for name in sorted(required)})


def announced_state(status: BoardStatus, result_version: int | None) -> str | None:
    """What subscribers are told of a board's lifecycle, as one comparable value: its status and,
    once CLOSED, its newest result version (each correction is news); None for an OPEN board."""
    if status is BoardStatus.OPEN:
        return None
    return f"{status}:{result_version}" if status is BoardStatus.CLOSED else str(status)
