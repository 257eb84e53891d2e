"""A randomized, seeded fault schedule over several regions: pure, no I/O, no clock.

``schedule(seed, seconds, regions, profile)`` returns every step of a run, load and nemeses, each at
its offset from the start, so one seed always yields the same steps (the processes' interleavings
still differ from run to run). One ``random.Random`` per stream (load, nemeses), both derived from
the seed, so a longer run begins with the same nemeses as a shorter one of the same seed.

Load: single awards, batches, failover retries of the same award to another region, conflicting
repeats (the same event id with another amount in another region). Nemeses, each bounded and
ending by itself after ``duration_s``: replication holds longer than the dedupe horizon and margin,
SIGKILL and SIGSTOP of every process kind, a Redis wipe, a Kafka broker restart, Cassandra stopped,
a board closed while awards race it, an intake whose catalog cache is stale while a board closes.
The short profile leaves out what is too slow for the suite (see ``LONG_ONLY``). Every nemesis kind
of the profile is drawn once before any is drawn twice, so a short run still covers them all.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    AWARD = "award"
    BATCH = "batch"
    FAILOVER = "failover_retry"
    CONFLICT = "conflicting_repeat"
    HOLD = "replication_hold"
    KILL = "sigkill"
    PAUSE = "sigstop"
    REDIS_WIPE = "redis_wipe"
    KAFKA_RESTART = "kafka_restart"
    CASSANDRA_STOP = "cassandra_stop"
    CLOSE_RACE = "close_race"
    STALE_CATALOG = "stale_catalog"


LOAD = (Kind.AWARD, Kind.BATCH, Kind.FAILOVER, Kind.CONFLICT)
LOAD_WEIGHTS = (5, 2, 2, 1)
PROCESSES = ("processor", "projector", "audit", "intake", "lifecycle", "replicator")
# A broker restart takes the region's whole Kafka away for several seconds and its clients' backoffs
# longer: kept for the long profile, where it is drawn like the others.
LONG_ONLY = frozenset({Kind.KAFKA_RESTART})


class Profile(StrEnum):
    SHORT = "short"
    LONG = "long"


@dataclass(frozen=True, slots=True)
class Settings:
    """The dedupe memory the regions run with, and the schedule's pacing."""

    horizon_s: float = 2.0
    margin_s: float = 2.0
    load_interval_s: tuple[float, float] = (0.1, 0.4)
    nemesis_interval_s: tuple[float, float] = (2.0, 5.0)
    quiet_tail_s: float = 5.0  # no nemesis starts this close to the end: every fault has ended by then


@dataclass(frozen=True, slots=True)
class Step:
    """One thing the runner does at ``at_s``: a load step in ``region`` (``other``: where a failover
    copy or a conflicting repeat goes), or a nemesis on ``region``'s ``target`` (a process kind for
    SIGKILL and SIGSTOP) for ``duration_s``. ``value`` is the step's own random number (a batch's
    size, when a racing close begins), so the runner draws nothing."""

    at_s: float
    kind: Kind
    region: str
    target: str = ""
    other: str = ""
    duration_s: float = 0.0
    value: float = 0.0

    @property
    def is_load(self) -> bool:
        return self.kind in LOAD

    def describe(self) -> str:
        named = self.is_load or self.target == "replicator" or self.kind is Kind.STALE_CATALOG
        where = (
            self.region + (f"/{self.target}" if self.target else "") + (f"->{self.other}" if named else "")
        )
        return f"{self.at_s:7.2f}s {self.kind:<20} {where:<22} {self.duration_s:5.2f}s"


def nemesis_kinds(profile: Profile) -> list[Kind]:
    kinds = [k for k in Kind if k not in LOAD]
    return kinds if profile is Profile.LONG else [k for k in kinds if k not in LONG_ONLY]


def schedule(
    seed: int,
    seconds: float,
    regions: Sequence[str],
    profile: Profile = Profile.SHORT,
    settings: Settings = Settings(),
) -> list[Step]:
    """Every step of a run of ``seconds`` over ``regions`` (two or more), ordered by time."""
    if len(regions) < 2:
        raise ValueError(f"a schedule needs two regions or more, got {list(regions)}")
    if seconds <= settings.quiet_tail_s:
        raise ValueError(
            f"a run of {seconds}s leaves no time before the quiet tail of {settings.quiet_tail_s}s"
        )
    load = _load(random.Random(f"{seed}:load"), seconds, list(regions), settings)
    nemeses = _nemeses(random.Random(f"{seed}:nemeses"), seconds, list(regions), profile, settings)
    return sorted([*load, *nemeses], key=lambda s: (s.at_s, s.kind, s.region, s.target))


def _load(rng: random.Random, seconds: float, regions: list[str], settings: Settings) -> list[Step]:
    steps, at = [], 0.0
    while (at := at + rng.uniform(*settings.load_interval_s)) < seconds:
        kind = rng.choices(LOAD, LOAD_WEIGHTS)[0]
        region = rng.choice(regions)
        other = (
            rng.choice([r for r in regions if r != region]) if kind in (Kind.FAILOVER, Kind.CONFLICT) else ""
        )
        steps.append(Step(round(at, 3), kind, region, other=other, value=rng.random()))
    return steps


def _duration(rng: random.Random, kind: Kind, settings: Settings) -> float:
    """How long the fault lasts: a hold outlasts the dedupe memory (horizon + margin) by 1-4 s."""
    memory = settings.horizon_s + settings.margin_s
    bounds = {
        Kind.HOLD: (memory + 1, memory + 4),
        Kind.KILL: (0.5, 3.0),
        Kind.PAUSE: (1.0, 4.0),
        Kind.REDIS_WIPE: (0.0, 0.0),
        Kind.KAFKA_RESTART: (1.0, 4.0),
        Kind.CASSANDRA_STOP: (2.0, 6.0),
        Kind.CLOSE_RACE: (3.0, 6.0),
        Kind.STALE_CATALOG: (3.0, 6.0),
    }[kind]
    return round(rng.uniform(*bounds), 3)


def _nemeses(
    rng: random.Random, seconds: float, regions: list[str], profile: Profile, settings: Settings
) -> list[Step]:
    """Nemeses staggered by ``nemesis_interval_s`` (closer in a run too short for the whole deck
    otherwise), drawn from a deck (see ``_deck``); one never
    starts on a (region, target) still faulted by an earlier one, and none starts within the quiet
    tail or runs into it."""
    kinds = nemesis_kinds(profile)
    busy: dict[tuple[str, str], float] = {}  # (region, process or nemesis kind) -> faulted until
    steps: list[Step] = []
    deck: list[tuple[Kind, str, str]] = []
    at, end = 0.0, seconds - settings.quiet_tail_s
    low, high = settings.nemesis_interval_s
    fit = end / (len(_deck(random.Random(0), kinds, regions)) + 1)  # a short run still deals the whole deck
    if fit < (low + high) / 2:
        low, high = 0.7 * fit, fit
    while (at := at + rng.uniform(low, high)) < end:
        deck = deck or _deck(rng, kinds, regions)
        for i, (kind, region, target) in enumerate(deck):
            key = (region, target or kind)
            if busy.get(key, 0.0) > at:
                continue
            duration = min(_duration(rng, kind, settings), end - at)
            del deck[i]
            busy[key] = at + duration + 1.0
            other = rng.choice([r for r in regions if r != region])
            steps.append(Step(round(at, 3), kind, region, target, other, round(duration, 3), rng.random()))
            break
    return steps


def _deck(rng: random.Random, kinds: list[Kind], regions: list[str]) -> list[tuple[Kind, str, str]]:
    """Every nemesis kind once, SIGKILL and SIGSTOP once per process kind, each in a region drawn at
    random; shuffled."""
    deck = []
    for kind in kinds:
        for target in PROCESSES if kind in (Kind.KILL, Kind.PAUSE) else ("",):
            deck.append((kind, rng.choice(regions), target))
    rng.shuffle(deck)
    return deck


def counts(steps: Sequence[Step]) -> dict[str, int]:
    """How many steps of each kind (SIGKILL and SIGSTOP by process kind), for the run's table."""
    found: dict[str, int] = {}
    for s in steps:
        name = f"{s.kind}:{s.target}" if s.kind in (Kind.KILL, Kind.PAUSE) else str(s.kind)
        found[name] = found.get(name, 0) + 1
    return dict(sorted(found.items()))
