"""The replicator's rules: resume or report a gap (``regions.core.resume``), never a second hop, batches with their checkpoint.

A state machine runs the rules against a reference model of a source partition whose retention
deletes records and of a replicator that crashes between fetching and committing: every source
offset ends up either copied exactly once or inside exactly one reported gap.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from regions.core.resume import Gap, Rewound, resume
from replicator.core import (
    Copy,
    SourceRecord,
    accepted_by,
    after_gap,
    header,
    lag,
    latest_checkpoints,
    plan_batch,
)
from schema.replication import (
    HOP_HEADER,
    ORIGIN_HEADER,
    SOURCE_OFFSET_HEADER,
    SOURCE_PARTITION_HEADER,
    ReplicationCheckpoint,
)

SOURCE = "us"


def start(partition: int = 0, at: int = 0, last_ms: int | None = None) -> ReplicationCheckpoint:
    return ReplicationCheckpoint(source_region=SOURCE, source_partition=partition, next_offset=at,
                                 last_record_ms=last_ms)  # fmt: skip


provenances = st.sampled_from(
    [
        (),
        ((ORIGIN_HEADER, b"us"),),
        ((ORIGIN_HEADER, b"us"), (HOP_HEADER, b"0")),
        ((ORIGIN_HEADER, b"eu"),),
        ((ORIGIN_HEADER, b"eu"), (HOP_HEADER, b"1")),
        ((HOP_HEADER, b"1"),),
        ((HOP_HEADER, b"x"),),
        (("trace", b"abc"),),
    ]
)


@st.composite
def partition_records(draw: st.DrawFn) -> list[SourceRecord]:
    """Committed records of one partition: increasing offsets with holes (transaction markers)."""
    steps = draw(st.lists(st.integers(min_value=1, max_value=3), max_size=30))
    first = draw(st.integers(min_value=0, max_value=100))
    records, at = [], first
    for i, step in enumerate(steps):
        records.append(SourceRecord(at, f"k{i}".encode(), f"v{i}".encode(), 1000 + at, draw(provenances)))
        at += step
    return records


@given(partition_records())
def test_copies_are_the_sources_own_records_in_order_with_their_provenance(
    records: list[SourceRecord],
) -> None:
    plan = plan_batch(SOURCE, 3, start(3), records)
    own = [r for r in records if accepted_by(SOURCE, r.headers)]
    assert [(c.key, c.value, c.timestamp_ms) for c in plan.copies] == [
        (r.key, r.value, r.timestamp_ms) for r in own
    ]
    assert [int(header(c.headers, SOURCE_OFFSET_HEADER) or b"") for c in plan.copies] == [
        r.offset for r in own
    ]
    for copy in plan.copies:
        assert header(copy.headers, ORIGIN_HEADER) == b"us"
        assert header(copy.headers, SOURCE_PARTITION_HEADER) == b"3"
        assert header(copy.headers, HOP_HEADER) == b"1"
    assert plan.skipped == len(records) - len(own)
    if records:
        assert plan.checkpoint == start(3, records[-1].offset + 1, records[-1].timestamp_ms)
    else:
        assert plan.checkpoint == start(3)


def test_records_of_other_origins_or_hops_are_never_copied() -> None:
    assert accepted_by("us", ())
    assert accepted_by("us", ((ORIGIN_HEADER, b"us"), (HOP_HEADER, b"0")))
    assert not accepted_by("us", ((ORIGIN_HEADER, b"eu"),))
    assert not accepted_by("us", ((HOP_HEADER, b"1"),))
    assert not accepted_by("us", ((HOP_HEADER, b"not a number"),))


@given(partition_records())
def test_a_copy_is_never_copied_again(records: list[SourceRecord]) -> None:
    """Pointed at a topic of copies (a misconfiguration), the replicator copies nothing: no second hop."""
    copies = plan_batch(SOURCE, 0, start(), records).copies
    as_source = [SourceRecord(i, c.key, c.value, c.timestamp_ms, c.headers) for i, c in enumerate(copies)]
    for region in ("us", "eu"):
        assert plan_batch(region, 0, start(), as_source).copies == ()


@given(partition_records(), st.lists(st.integers(min_value=0, max_value=30), max_size=5))
def test_batch_boundaries_and_refetched_records_change_nothing(
    records: list[SourceRecord], cuts: list[int]
) -> None:
    """Copying in any batches, each refetching some records the checkpoint already covers, yields
    exactly the copies of one batch."""
    whole = plan_batch(SOURCE, 0, start(), records)
    checkpoint, copies = start(), list[Copy]()
    bounds = sorted({0, len(records), *[min(c, len(records)) for c in cuts]})
    for low, high in pairwise(bounds):
        plan = plan_batch(SOURCE, 0, checkpoint, records[max(0, low - 2) : high])
        copies += plan.copies
        checkpoint = plan.checkpoint
    assert tuple(copies) == whole.copies and checkpoint == whole.checkpoint


def test_offsets_that_do_not_increase_are_refused() -> None:
    records = [SourceRecord(5, None, b"a", 0), SourceRecord(5, None, b"b", 0)]
    try:
        plan_batch(SOURCE, 0, start(), records)
    except ValueError as exc:
        assert "5 then 5" in str(exc)
    else:
        raise AssertionError("repeated offsets were accepted")


def test_the_last_checkpoint_per_partition_of_this_source_wins() -> None:
    written = [start(0, 4), start(1, 2), ReplicationCheckpoint(source_region="ap", source_partition=0,
               next_offset=99, last_record_ms=None), start(0, 9, 7), start(5, 3)]  # fmt: skip
    assert latest_checkpoints(SOURCE, [0, 1, 2], written) == {0: start(0, 9, 7), 1: start(1, 2), 2: start(2)}


def test_lag_counts_records_and_ages_the_newest_copy_while_behind() -> None:
    assert lag(start(0, 10, 1_000), 10, 9_000).records == 0
    assert lag(start(0, 10, 1_000), 10, 9_000).seconds == 0.0
    behind = lag(start(0, 10, 1_000), 15, 9_000)
    assert (behind.records, behind.seconds) == (5, 8.0)
    assert lag(start(0, 0), 3, 9_000).seconds is None


def test_a_source_that_does_not_answer_is_never_reported_caught_up() -> None:
    """A silent source (cut off) has written heartbeats since: its lag is the time since the newest
    copy, even when the end it last reported was reached; the records are a lower bound."""
    silent = lag(start(0, 10, 1_000), 10, 9_000, source_answers=False)
    assert (silent.records, silent.seconds) == (0, 8.0)
    assert lag(start(0, 10, 1_000), 14, 9_000, source_answers=False) == lag(start(0, 10, 1_000), 14, 9_000)
    assert lag(start(0, 0), 0, 9_000, source_answers=False).seconds is None  # nothing heard from it, ever


class ReplicationMachine(RuleBasedStateMachine):
    """A source partition that grows and loses old records to retention; a replicator that fetches
    a batch, may crash before committing it, and resumes from its checkpoint after a restart."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[SourceRecord] = []  # every record ever appended
        self.log_start = 0
        self.checkpoint = start()
        self.position: int | None = None  # None: restarted, must resume first
        self.copied: list[int] = []  # source offsets in the local topic, committed
        self.gaps: list[Gap] = []

    @property
    def log_end(self) -> int:
        return len(self.log)

    @rule(count=st.integers(min_value=1, max_value=5), own=st.booleans())
    def append(self, count: int, own: bool) -> None:
        for _ in range(count):
            at = len(self.log)
            headers = () if own or at % 3 else ((ORIGIN_HEADER, b"eu"), (HOP_HEADER, b"1"))
            self.log.append(SourceRecord(at, b"k", b"v", at, headers))

    @rule(count=st.integers(min_value=1, max_value=6))
    def retention_deletes(self, count: int) -> None:
        self.log_start = min(self.log_end, self.log_start + count)

    @precondition(lambda self: self.position is None)
    @rule()
    def restart(self) -> None:
        outcome = resume(self.checkpoint.next_offset, self.log_start, self.log_end)
        assert not isinstance(outcome, Rewound)
        if isinstance(outcome, Gap):
            self._report(outcome)
        self.position = self.checkpoint.next_offset

    @precondition(lambda self: self.position is not None)
    @rule(size=st.integers(min_value=1, max_value=4), crash=st.booleans())
    def copy_batch(self, size: int, crash: bool) -> None:
        assert self.position is not None
        if self.position < self.log_start:  # the fetch is out of range: as at a restart
            gap = resume(self.position, self.log_start, self.log_end)
            assert isinstance(gap, Gap)
            self._report(gap)
            self.position = self.checkpoint.next_offset
        batch = self.log[self.position : self.position + size]
        plan = plan_batch(SOURCE, 0, self.checkpoint, batch)
        if crash:  # the transaction never committed: its copies and checkpoint are lost together
            self.position = None
            return
        self.copied += [int(header(c.headers, SOURCE_OFFSET_HEADER) or b"") for c in plan.copies]
        self.checkpoint = plan.checkpoint
        self.position = plan.checkpoint.next_offset

    def _report(self, gap: Gap) -> None:
        self.gaps.append(gap)
        self.checkpoint = after_gap(self.checkpoint, gap)

    @invariant()
    def every_offset_is_copied_once_or_in_one_gap(self) -> None:
        assert len(self.copied) == len(set(self.copied))
        missing = [o for g in self.gaps for o in range(g.first_missing, g.first_available)]
        assert len(missing) == len(set(missing)) and not set(missing) & set(self.copied)
        own = {r.offset for r in self.log[: self.checkpoint.next_offset] if accepted_by(SOURCE, r.headers)}
        assert own - set(missing) == set(self.copied)
        assert all(o < self.log_start for o in missing)


TestReplication = ReplicationMachine.TestCase
