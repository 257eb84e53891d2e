"""The Count-Min Sketch core: its shape, its hashing, convergence of counters over arrival orders
and duplicates, and its error bound on a fixed seed."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from regions.core.aggregation import DedupeMemory, Seen
from regions.core.candidates import Counted, count_award
from regions.core.sketch import BLOCK, Counters, Shape, Sketch, error_bound
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent

MEMORY = DedupeMemory(86_400_000)


def test_the_shape_follows_epsilon_and_delta_only() -> None:
    assert Shape.of(0.001, 0.001) == Shape(2719, 7)
    assert Shape.of(0.01, 0.5) == Shape(272, 1)
    assert Shape(2719, 7).blocks_per_row == 43 and Shape(2719, 7).block_size(42) == 2719 - 42 * BLOCK


def test_columns_are_the_same_in_every_process() -> None:
    # pinned: keyed BLAKE2b, never the per-process salted hash()
    assert Shape(2719, 7).columns("song-1") == Shape(2719, 7).columns("song-1")
    assert Shape(1000, 3).columns("song-1") == (936, 842, 892)


def _award(item: str, match: str, amount: int, region: str = "eu", at_ms: int = 1_000) -> AwardEvent:
    return AwardEvent(
        event_id=event_id("tr", match, item, "play"), digest=payload_digest(amount, None), board_id="tr",
        match_id=match, user_id=item, award_type="play", amount=amount, occurred_at_ms=None, region=region,
        accepted_at_ms=at_ms, aggregation="SUM", sort_order="DESC", tie_policy="USER_ID", approximate="1,0.1,0.1",
    )  # fmt: skip


def _fold(awards: list[AwardEvent], shape: Shape) -> dict[tuple[int, int], Counters]:
    """The counters after folding ``awards`` in order, deduplicated by event id as the processor does."""
    sketch, seen = Sketch(shape, lambda _: None), dict[str, Seen]()
    for award in awards:
        outcome = count_award(seen.get(award.event_id), award, MEMORY)
        if isinstance(outcome, Counted):
            sketch.add(award.user_id, outcome.amount)
            seen[award.event_id] = outcome.seen
    return sketch.changed_blocks()


AWARDS = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 9), st.integers(1, 50), st.sampled_from(["eu", "us"]),
              st.integers(0, 3)),
    min_size=1, max_size=40,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(AWARDS, st.randoms(use_true_random=False))
def test_any_order_with_any_copies_gives_the_same_counters(raw: list[tuple[str, int, int, str, int]],
                                                           rnd: random.Random) -> None:  # fmt: skip
    """Copies of one event id (a retry in another region, maybe another payload) and exact
    duplicates, in any order: the counters are those of the winning copies, everywhere alike."""
    shape = Shape(64, 3)
    awards = [
        _award(item, f"m{match}", amount, region, 1_000 + at) for item, match, amount, region, at in raw
    ]
    shuffled = [*awards, *rnd.sample(awards, len(awards) // 2)]
    rnd.shuffle(shuffled)
    winners: dict[str, AwardEvent] = {}
    for a in awards:
        best = winners.get(a.event_id)
        if best is None or (a.accepted_at_ms, a.region, a.digest) < (
            best.accepted_at_ms,
            best.region,
            best.digest,
        ):
            winners[a.event_id] = a
    expected = _fold(sorted(winners.values(), key=lambda a: a.event_id), shape)
    assert _fold(shuffled, shape) == expected
    assert _fold(awards, shape) == expected


def test_estimates_never_fall_below_and_stay_within_the_bound() -> None:
    """On a fixed seed, 200k units over 20k items (Zipf-like): every estimate is at least the true
    count, and more than delta's share exceed it by epsilon x total in no more than delta of items."""
    epsilon, delta = 0.001, 0.01
    shape, rnd = Shape.of(epsilon, delta), random.Random(7)
    sketch, truth = Sketch(shape, lambda _: None), dict[str, int]()
    weights = [1 / (i**1.1) for i in range(1, 20_001)]
    for i in rnd.choices(range(20_000), weights, k=50_000):
        amount = rnd.randint(1, 7)
        sketch.add(f"item-{i}", amount)
        truth[f"item-{i}"] = truth.get(f"item-{i}", 0) + amount
    total, bound = sum(truth.values()), error_bound(epsilon, sum(truth.values()))
    errors = [sketch.estimate(item) - count for item, count in truth.items()]
    assert min(errors) >= 0
    assert sum(e > bound for e in errors) <= math.ceil(delta * len(errors))
    assert bound == math.ceil(epsilon * total)


def test_a_block_read_from_the_store_is_counted_on() -> None:
    shape = Shape(200, 2)
    first = Sketch(shape, lambda _: None)
    first.add("x", 5)
    stored = first.changed_blocks()
    second = Sketch(shape, stored.get)
    assert second.estimate("x") == 5 and second.add("x", 2) == 7
    assert second.changed_blocks() != stored
