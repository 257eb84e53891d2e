"""Positions per (region, partition) merge to the furthest of each field, and a projection's freshness
per region follows its least advanced partition."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.freshness import FreshnessRule, RegionStatus, region_status, region_statuses
from regions.core.positions import SourceKey, SourcePosition, merge_marks

positions = st.builds(
    SourcePosition,
    offset=st.integers(-1, 10**12),
    accepted_at_ms=st.integers(0, 2 * 10**12),
    heartbeat_at_ms=st.integers(0, 2 * 10**12),
    gaps=st.integers(0, 5),
)
keys = st.tuples(st.sampled_from(["eu", "us", "ap-south"]), st.integers(0, 5))
marks = st.dictionaries(keys, positions, max_size=8)
NOW = 1_700_000_010_000


@given(positions, positions, positions)
def test_merging_positions_is_order_free_and_idempotent(
    a: SourcePosition, b: SourcePosition, c: SourcePosition
) -> None:
    assert a.merged(b) == b.merged(a)
    assert a.merged(b).merged(c) == a.merged(b.merged(c))
    assert a.merged(a) == a
    merged = a.merged(b)
    assert merged.offset >= max(a.offset, b.offset) and merged.gaps >= max(a.gaps, b.gaps)


@given(marks, marks)
def test_merged_marks_never_claim_less_than_either_side(
    older: dict[SourceKey, SourcePosition], newer: dict[SourceKey, SourcePosition]
) -> None:
    merged = merge_marks(older, newer)
    assert set(merged) == set(older) | set(newer)
    for key, mark in {**older, **newer}.items():
        assert merged[key].offset >= mark.offset


def _beats(region: str, partitions: int, at_ms: int, **changes: int) -> dict[SourceKey, SourcePosition]:
    return {
        (region, p): SourcePosition(offset=10, heartbeat_at_ms=at_ms, **changes) for p in range(partitions)
    }


def test_a_region_heard_of_on_every_partition_within_the_threshold_is_fresh() -> None:
    heard = _beats("us", 3, NOW - 1_500) | {("us", 1): SourcePosition(12, accepted_at_ms=NOW - 800)}

    assert region_status("us", heard, 3, NOW, 5.0) == RegionStatus("us", NOW - 800, 1.5, False, False)


def test_one_silent_partition_makes_the_region_stale_and_its_lag_that_partitions() -> None:
    heard = _beats("us", 3, NOW - 1_000) | {("us", 2): SourcePosition(4, heartbeat_at_ms=NOW - 9_000)}

    status = region_status("us", heard, 3, NOW, 5.0)

    assert (status.lag_s, status.stale) == (9.0, True)


def test_a_partition_never_heard_of_leaves_the_lag_unknown_and_the_region_stale() -> None:
    heard = _beats("us", 2, NOW)

    assert region_status("us", heard, 3, NOW, 5.0) == RegionStatus("us", None, None, True, False)
    assert region_status("ap", heard, 3, NOW, 5.0).stale  # a region the projection never heard of


def test_a_reported_gap_shows_whatever_the_freshness() -> None:
    heard = _beats("us", 2, NOW) | {("us", 1): SourcePosition(10, heartbeat_at_ms=NOW, gaps=1)}

    assert region_status("us", heard, 2, NOW, 5.0) == RegionStatus("us", None, 0.0, False, True)


def test_a_reader_told_of_fewer_partitions_than_it_hears_of_still_waits_for_all_of_them() -> None:
    heard = _beats("us", 3, NOW - 1_000) | {("us", 5): SourcePosition(4, heartbeat_at_ms=NOW - 9_000)}

    assert (region_status("us", heard, 1, NOW, 5.0).lag_s, region_status("us", heard, 1, NOW, 5.0).stale) == (
        None, True,
    )  # partitions 3 and 4 were never heard of
    heard |= _beats("us", 5, NOW - 1_000)
    assert region_status("us", heard, 1, NOW, 5.0) == RegionStatus("us", None, 9.0, True, False)


@given(marks, st.floats(0.1, 100), st.integers(1, 6))
def test_stale_exactly_when_the_lag_is_unknown_or_over_the_threshold(
    heard: dict[SourceKey, SourcePosition], threshold: float, partitions: int
) -> None:
    for status in region_statuses(["eu"], heard, partitions, 2 * 10**12, threshold):
        assert status.stale == (status.lag_s is None or status.lag_s > threshold)
        assert status.lag_s is None or status.lag_s >= 0


def test_every_region_of_the_deployment_and_of_the_positions_is_listed_once_by_name() -> None:
    rule = FreshnessRule(("us", "eu"), partitions=1)
    statuses = rule.statuses(_beats("ap", 1, NOW) | _beats("eu", 1, NOW), NOW)

    assert [s.region for s in statuses] == ["ap", "eu", "us"]
    assert [s.stale for s in statuses] == [False, False, True]
