"""The fault schedule generator (pure): seeded, bounded, covering every nemesis of its profile."""

from __future__ import annotations

import pytest

from tests.faults.schedule import (
    LOAD,
    LONG_ONLY,
    PROCESSES,
    Kind,
    Profile,
    Settings,
    counts,
    nemesis_kinds,
    schedule,
)

TWO = ("eu", "us")


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another() -> None:
    assert schedule(3, 60, TWO) == schedule(3, 60, TWO)
    assert schedule(3, 60, TWO) != schedule(4, 60, TWO)


def test_a_longer_run_begins_with_the_nemeses_of_a_shorter_one() -> None:
    short = [s for s in schedule(5, 300, TWO, Profile.LONG) if not s.is_load and s.at_s < 200]
    long = [s for s in schedule(5, 1800, TWO, Profile.LONG) if not s.is_load and s.at_s < 200]
    assert [(s.at_s, s.kind, s.region, s.target) for s in short] == [
        (s.at_s, s.kind, s.region, s.target) for s in long
    ]


@pytest.mark.parametrize("seed", range(20))
def test_the_short_profile_covers_every_nemesis_and_every_process(seed: int) -> None:
    steps = schedule(seed, 45, TWO)
    kinds = {s.kind for s in steps}
    assert set(LOAD) <= kinds
    assert set(nemesis_kinds(Profile.SHORT)) <= kinds and not (LONG_ONLY & kinds)
    for kind in (Kind.KILL, Kind.PAUSE):
        assert {s.target for s in steps if s.kind is kind} == set(PROCESSES), counts(steps)


@pytest.mark.parametrize("seed", range(20))
def test_faults_are_bounded_end_before_the_quiet_tail_and_never_overlap_on_one_target(seed: int) -> None:
    regions = ("eu", "us", "ap")
    settings = Settings()
    steps = schedule(seed, 300, regions, Profile.LONG, settings)
    nemeses = [s for s in steps if not s.is_load]
    assert Kind.KAFKA_RESTART in {s.kind for s in nemeses}
    assert all(s.at_s + s.duration_s <= 300 - settings.quiet_tail_s for s in nemeses)
    assert [s.at_s for s in steps] == sorted(s.at_s for s in steps)
    faulted: dict[tuple[str, str], float] = {}
    for s in nemeses:
        key = (s.region, s.target or s.kind)
        assert faulted.get(key, -1.0) < s.at_s, f"{key} faulted again while faulted: {s.describe()}"
        faulted[key] = s.at_s + s.duration_s
    holds = [s for s in nemeses if s.kind is Kind.HOLD]
    assert holds and all(s.duration_s > settings.horizon_s + settings.margin_s for s in holds)
    for s in steps:
        assert s.region in regions and (s.other == "" or (s.other in regions and s.other != s.region))


def test_a_schedule_needs_two_regions_and_time_before_its_quiet_tail() -> None:
    with pytest.raises(ValueError, match="two regions"):
        schedule(1, 60, ("eu",))
    with pytest.raises(ValueError, match="quiet tail"):
        schedule(1, 3, TWO)
