"""The close barrier as a pure state machine, driven against a reference model of regions' streams."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from regions.core.boards import BoardStatus
from regions.core.lifecycle import (
    AlreadyClosing,
    Archive,
    AwaitCutoffs,
    BeginClose,
    CloseProgress,
    Idle,
    IllegalTransition,
    WaitUntil,
    WriteMarkers,
    check_transition,
    close_request,
    first_cutoff,
    is_late,
    next_step,
    position_name,
    required_cutoffs,
)

REGIONS = ("eu", "us")
HOME = "eu"
PARTITIONS = 2
DELAY = 50
REQUIRED = required_cutoffs(REGIONS, PARTITIONS)


def test_transitions_go_forward_only() -> None:
    allowed = {(BoardStatus.OPEN, BoardStatus.CLOSING), (BoardStatus.CLOSING, BoardStatus.CLOSED)}
    for current, target in itertools.product(BoardStatus, BoardStatus):
        if (current, target) in allowed:
            check_transition(current, target)
        else:
            with pytest.raises(IllegalTransition, match=f"a {current} board cannot become {target}"):
                check_transition(current, target)


def test_close_is_idempotent_past_open() -> None:
    assert close_request(BoardStatus.OPEN) == BeginClose()
    assert close_request(BoardStatus.CLOSING) == AlreadyClosing(BoardStatus.CLOSING)
    assert close_request(BoardStatus.CLOSED) == AlreadyClosing(BoardStatus.CLOSED)


@given(stream=st.lists(st.sampled_from(["award", "marker"]), max_size=30))
def test_awards_after_the_first_marker_are_late_and_only_those(stream: list[str]) -> None:
    cutoff: int | None = None
    for offset, kind in enumerate(stream):
        if kind == "marker":
            cutoff = first_cutoff(cutoff, offset)
    first = stream.index("marker") if "marker" in stream else None
    assert cutoff == first
    for offset, kind in enumerate(stream):
        if kind == "award":
            assert is_late(cutoff, offset) == (first is not None and offset > first)


class CloseMachine(RuleBasedStateMachine):
    """Awards, closes, workers of both regions, the home projector and crashes in any order.

    The model keeps each (region, partition) stream and what the home projector has read of it; the
    workers only see what the catalog and the projection would tell them (``CloseProgress``)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.status = BoardStatus.OPEN
        self.closing_at: int | None = None
        self.markers: set[str] = set()  # regions whose markers the catalog records
        self.streams: dict[str, list[tuple[str, int]]] = {n: [] for n in sorted(REQUIRED)}  # (kind, time)
        self.read: dict[str, int] = dict.fromkeys(REQUIRED, 0)  # records the home projector has read
        self.reached: dict[str, int] = {}
        self.archived: dict[str, int] | None = None

    def _set(self, target: BoardStatus) -> None:
        check_transition(self.status, target)
        self.status = target

    def _progress(self) -> CloseProgress:
        return CloseProgress(
            "b", HOME, self.status, self.closing_at, frozenset(self.markers), dict(self.reached)
        )

    @rule(step=st.integers(0, 2 * DELAY))
    def time_passes(self, step: int) -> None:
        self.now += step

    @rule(region=st.sampled_from(REGIONS), partition=st.integers(0, PARTITIONS - 1))
    def an_award_lands(self, region: str, partition: int) -> None:
        self.streams[position_name(region, partition)].append(("award", self.now))

    @rule()
    def close(self) -> None:
        if isinstance(close_request(self.status), BeginClose):
            self._set(BoardStatus.CLOSING)
            self.closing_at = self.now

    @rule(region=st.sampled_from(REGIONS), crash_before_recording=st.booleans())
    def worker_acts(self, region: str, crash_before_recording: bool) -> None:
        step = next_step(
            self._progress(), region=region, required=REQUIRED, now_ms=self.now, marker_delay_ms=DELAY
        )
        if isinstance(step, WriteMarkers):
            assert self.closing_at is not None and self.now >= self.closing_at + DELAY
            for partition in range(PARTITIONS):
                self.streams[position_name(region, partition)].append(("marker", self.now))
            if not crash_before_recording:  # a crash in between: the next worker writes them again
                self.markers.add(region)
        elif isinstance(step, WaitUntil):
            assert self.closing_at is not None and step.at_ms == self.closing_at + DELAY > self.now
        elif isinstance(step, Archive):
            assert region == HOME
            # After a crash before CLOSED the archive is done again, from the same cutoffs.
            assert self.archived is None or self.archived == step.cutoffs
            self.archived = step.cutoffs
            if not crash_before_recording:  # a crash before CLOSED: the archive is done again
                self._set(BoardStatus.CLOSED)
        elif isinstance(step, AwaitCutoffs):
            assert step.missing == REQUIRED - self.reached.keys() and step.missing
        else:
            assert isinstance(step, Idle)
            assert self.status is not BoardStatus.CLOSING or (region != HOME and region in self.markers)

    @rule(name=st.sampled_from(sorted(REQUIRED)))
    def home_projector_reads(self, name: str) -> None:
        stream = self.streams[name]
        if self.read[name] < len(stream):
            offset = self.read[name]
            if stream[offset][0] == "marker":
                self.reached[name] = first_cutoff(self.reached.get(name), offset)
            self.read[name] += 1

    @invariant()
    def markers_never_precede_the_delay(self) -> None:
        for stream in self.streams.values():
            for kind, at in stream:
                if kind == "marker":
                    assert self.closing_at is not None and at >= self.closing_at + DELAY

    @invariant()
    def closed_only_with_every_first_marker_as_its_cutoff(self) -> None:
        if self.status is BoardStatus.CLOSED:
            assert self.archived is not None and self.archived.keys() == REQUIRED
            for name, cutoff in self.archived.items():
                kinds = [kind for kind, _ in self.streams[name]]
                assert cutoff == kinds.index("marker")


TestCloseMachine = CloseMachine.TestCase
