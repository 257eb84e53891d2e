"""Processor rounds on windowed boards, against a reference model.

Periods: an award counts in the period of its event time, as the board ``B@<key>``, and a period's
cutoff makes only that period's later awards late. Rolling: random awards from two regions and the
home region's expiry markers, folded in any interleaving of the two streams and cut into rounds
anywhere: every region ends with the reference model's totals (the fold of the awards of the days
still in the window) and board membership, an expiry visits only the players with points in the
expired days, and the totals topic alone restores the same state.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from aiokafka import ConsumerRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from regions.core.aggregation import fold
from regions.core.boards import Aggregation
from regions.core.periods import Period, Weekday, WindowSpec, day_of, day_start_of, period_of
from regions.core.windows import encode_window
from regions.processor.restore import _Loader
from regions.processor.round import Round, Source
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import MemoryStore
from schema.event_id import event_id, payload_digest
from schema.lifecycle import CutoffMarker, LifecycleCodec, cutoff_marker_key
from schema.records import AwardEvent, Codec, PlayerTotal, totals_key
from schema.replication import SOURCE_OFFSET_HEADER
from schema.windows import ExpiryMarker, expiry_key

CODEC = Codec()
KAFKA = KafkaSettings(topic_prefix="t")
EU = Source("t.awards.v1", "eu", replicated=False)
US = Source("t.awards.from-us.v1", "us", replicated=True)
TOTALS = "t.totals.v1"
ROLLING = WindowSpec(Period.ROLLING, 3, "Europe/Stockholm")
FIRST_DAY = datetime(2026, 3, 27).toordinal()  # the days span the spring DST change (March 29)


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def _award(board: str, window: str, user: str, match: str, amount: int, at_ms: int, *,
           region: str = "eu", aggregation: str = "SUM") -> AwardEvent:  # fmt: skip
    return AwardEvent(
        event_id=event_id(board, match, user, "kill"), digest=payload_digest(amount, at_ms), board_id=board,
        match_id=match, user_id=user, award_type="kill", amount=amount, occurred_at_ms=at_ms, region=region,
        accepted_at_ms=at_ms, aggregation=aggregation, sort_order="DESC", tie_policy="FIRST_REACHED",
        window=window,
    )  # fmt: skip


def _record(source: Source, offset: int, key: bytes, value: bytes) -> ConsumerRecord:
    headers = [(SOURCE_OFFSET_HEADER, str(offset).encode())] if source.replicated else []
    return ConsumerRecord(source.topic, 0, offset, 0, 0, key, value, None, 0, 0, headers)


def _round(store: MemoryStore, records: list[tuple[Source, ConsumerRecord]]) -> Round:
    fold_ = Round(KAFKA, CODEC, store, 0, 86_400_000)
    for source, record in records:
        fold_.add(source, record)
    store.write(fold_.store_batch({}))
    return fold_


def test_an_award_counts_in_the_period_of_its_event_time_and_a_cutoff_closes_only_that_period() -> None:
    window = encode_window(WindowSpec(Period.DAILY, time_zone="America/New_York"))
    store, lifecycle = MemoryStore(), LifecycleCodec()
    day_one = _award("b", window, "ann", "m1", 5, ms("2026-11-01T23:59:59-05:00"))
    day_two = _award("b", window, "ann", "m2", 7, ms("2026-11-02T00:00:00-05:00"))  # exactly at the start
    marker = CutoffMarker(board_id="b@2026-11-01", region="eu", closing_at_ms=1, written_at_ms=2)
    late = _award("b", window, "ann", "m3", 9, ms("2026-11-01T12:00:00-05:00"))
    on_time = _award("b", window, "ann", "m4", 1, ms("2026-11-02T12:00:00-05:00"))
    records = [(totals_key("b", "ann"), CODEC.encode(day_one)), (totals_key("b", "ann"), CODEC.encode(day_two)),
               (cutoff_marker_key("b@2026-11-01"), lifecycle.encode(marker)),
               (totals_key("b", "ann"), CODEC.encode(late)), (totals_key("b", "ann"), CODEC.encode(on_time))]  # fmt: skip
    done = _round(store, [(EU, _record(EU, i, k, v)) for i, (k, v) in enumerate(records)])
    day = store.player(("b@2026-11-01", "ann"))
    assert day is not None and (day.total, day.version) == (5, 1)
    assert store.player(("b@2026-11-02", "ann")).total == 8  # type: ignore[union-attr]
    assert store.player(("b", "ann")) is None
    reconciled = [CODEC.reconciliation(v) for t, _, v in done.out if t == "t.reconciliation.v1"]
    assert [(r.reason, r.award.match_id) for r in reconciled if r.award] == [("late", "m3")]
    boards = {CODEC.totals(v).board_id for t, _, v in done.out if t == TOTALS and b"watermark" not in _}  # type: ignore[union-attr]
    assert boards == {"b@2026-11-01", "b@2026-11-02"}


# ---- rolling: the reference model and random histories ----------------------------------------

Sent = tuple[str, str, int, int, str]  # (region, user, day, amount, match)


def _at(day: int, amount: int) -> int:
    return day_start_of(ROLLING, day) + 3_600_000 * (amount % 20)


def _reference(aggregation: Aggregation, sent: list[Sent], expired: int | None) -> dict[str, int]:
    totals: dict[str, int] = {}
    latest: dict[str, tuple[int, str]] = {}  # LATEST: the score of the award with the latest (time, event id)
    for _, user, day, amount, match in sent:
        if expired is None or day > expired:
            order = (_at(day, amount), event_id("r", match, user, "kill")[:16])
            if aggregation is not Aggregation.LATEST:
                totals[user] = fold(aggregation, totals.get(user), amount)
            elif order > latest.get(user, (-1, "")):
                latest[user], totals[user] = order, amount
    return totals


@st.composite
def histories(draw: st.DrawFn) -> tuple[Aggregation, list[Sent], list[tuple[int, int]]]:
    aggregation = draw(st.sampled_from(list(Aggregation)))
    awards = draw(st.lists(st.tuples(st.sampled_from(["eu", "us"]), st.sampled_from(["ann", "bob", "cyd", "dan"]),
                                     st.integers(0, 7), st.integers(1, 50)), max_size=40))  # fmt: skip
    sent = [(r, u, FIRST_DAY + d, a, f"m{i}") for i, (r, u, d, a) in enumerate(awards)]
    expiries = draw(st.lists(st.tuples(st.integers(-1, 7).map(lambda d: FIRST_DAY + d), st.integers(0, 60)),
                             max_size=4))  # fmt: skip
    return aggregation, sent, expiries


def _streams(aggregation: Aggregation, sent: list[Sent], expiries: list[tuple[int, int]]):  # type: ignore[no-untyped-def]
    """Each region's stream in its own order: eu's awards with the expiry markers (day, position)
    at their positions (eu is the board's home), us's awards."""
    window = encode_window(ROLLING)
    eu: list[tuple[bytes, bytes]] = []
    us: list[tuple[bytes, bytes]] = []
    for region, user, day, amount, match in sent:
        award = _award("r", window, user, match, amount, _at(day, amount), region=region,
                       aggregation=aggregation.value)  # fmt: skip
        (eu if region == "eu" else us).append((totals_key("r", user), CODEC.encode(award)))
    for through, at in sorted(expiries, key=lambda x: x[1], reverse=True):
        marker = ExpiryMarker(board_id="r", region="eu", expired_through=through, aggregation=aggregation.value,
                              sort_order="DESC", tie_policy="FIRST_REACHED", window=window, written_at_ms=0)  # fmt: skip
        eu.insert(min(at, len(eu)), (expiry_key("r"), CODEC.encode(marker)))
    return eu, us


def _interleave(eu: list[tuple[bytes, bytes]], us: list[tuple[bytes, bytes]], picks: list[bool]) -> list[tuple[Source, ConsumerRecord]]:  # fmt: skip
    out, i, j = [], 0, 0
    for pick in [*picks, *([True] * (len(eu) + len(us)))]:
        if pick and i < len(eu):
            out.append((EU, _record(EU, i, *eu[i])))
            i += 1
        elif j < len(us):
            out.append((US, _record(US, j, *us[j])))
            j += 1
        elif i < len(eu):
            out.append((EU, _record(EU, i, *eu[i])))
            i += 1
    return out


def _run(records: list[tuple[Source, ConsumerRecord]], cuts: list[int]) -> tuple[MemoryStore, list[Round]]:
    store, rounds, start = MemoryStore(), [], 0
    for cut in sorted({c % (len(records) + 1) for c in cuts} | {len(records)}):
        rounds.append(_round(store, records[start:cut]))
        start = cut
    return store, rounds


def _board(store: MemoryStore, users: set[str]) -> dict[str, int]:
    found = {}
    for user in users:
        state = store.player(("r", user))
        if state is not None and state.buckets:
            found[user] = state.total
    return found


@settings(max_examples=200)
@given(histories(), st.lists(st.booleans(), max_size=80),
       st.lists(st.booleans(), max_size=80), st.lists(st.integers(0, 100), max_size=5))  # fmt: skip
def test_every_region_folds_the_days_in_the_window_whatever_the_arrival_order(
    history: tuple[Aggregation, list[Sent], list[tuple[int, int]]],
    picks_a: list[bool], picks_b: list[bool], cuts: list[int],
) -> None:  # fmt: skip
    aggregation, sent, expiries = history
    eu, us = _streams(aggregation, sent, expiries)
    expected = _reference(aggregation, sent, max((day for day, _ in expiries), default=None))
    users = {s[1] for s in sent}
    seen = []
    for picks in (picks_a, picks_b):
        store, rounds = _run(_interleave(eu, us, picks), cuts)
        assert _board(store, users) == expected
        seen.append(store)
        # the totals topic, replayed, restores the same state
        restored = MemoryStore()
        loader = _Loader(restored, TOTALS)
        outs = [ConsumerRecord(TOTALS, 0, n, 0, 0, k, v, None, 0, 0, [])
                for n, (t, k, v) in enumerate(o for r in rounds for o in r.out + r.watermarks()) if t == TOTALS]  # fmt: skip
        if outs:
            asyncio.run(loader(outs))
        for user in users:
            live, back = store.player(("r", user)), restored.player(("r", user))
            assert (live and (live.total, live.version, live.buckets)) == (
                back and (back.total, back.version, back.buckets)
            )
        assert restored.expired_through("r") == store.expired_through("r")
    # the projection's view: the newest total of each player is on the board iff not removed
    assert _board(seen[0], users) == _board(seen[1], users)


def test_an_expiry_visits_only_the_players_with_points_in_the_expired_days() -> None:
    window = encode_window(ROLLING)
    store = MemoryStore()
    records = []
    for n in range(200):  # 200 players on the first day, 3 of them also on the third
        award = _award("r", window, f"p{n:03d}", f"a{n}", 1, day_start_of(ROLLING, FIRST_DAY + 2) + 1000)
        records.append((totals_key("r", f"p{n:03d}"), CODEC.encode(award)))
    for n in range(3):
        award = _award("r", window, f"p{n:03d}", f"b{n}", 1, day_start_of(ROLLING, FIRST_DAY) + 1000)
        records.append((totals_key("r", f"p{n:03d}"), CODEC.encode(award)))
    _round(store, [(EU, _record(EU, i, k, v)) for i, (k, v) in enumerate(records)])
    marker = ExpiryMarker(board_id="r", region="eu", expired_through=FIRST_DAY, aggregation="SUM",
                          sort_order="DESC", tie_policy="FIRST_REACHED", window=window, written_at_ms=0)  # fmt: skip
    expiry = _round(store, [(EU, _record(EU, 500, expiry_key("r"), CODEC.encode(marker)))])
    changed = [CODEC.totals(v) for t, _, v in expiry.out if t == TOTALS]
    players = [c for c in changed if isinstance(c, PlayerTotal)]
    assert sorted(p.user_id for p in players) == ["p000", "p001", "p002"]
    assert all(p.total == 1 and not p.removed for p in players)
    late = _award("r", window, "zed", "c1", 1, day_start_of(ROLLING, FIRST_DAY) + 5000)
    again = _round(store, [(US, _record(US, 0, totals_key("r", "zed"), CODEC.encode(late)))])
    assert [CODEC.reconciliation(v).reason for t, _, v in again.out if t == "t.reconciliation.v1"] == ["late"]


def test_the_day_of_an_award_follows_the_zone_across_dst() -> None:
    # 23:30 UTC on March 29 is already March 30 in Stockholm (summer time, +02:00)
    assert day_of(ROLLING, int(datetime(2026, 3, 29, 23, 30, tzinfo=UTC).timestamp() * 1000)) == FIRST_DAY + 3


# ---- periods: random awards across DST and period boundaries, cutoffs at random points -------

WEEKLY = WindowSpec(Period.WEEKLY, time_zone="America/New_York", first_day_of_week=Weekday.SUNDAY)
SPAN_START = ms("2026-10-25T00:00:00-04:00")  # three weeks around the end of daylight time (Nov 1)


@settings(max_examples=150)
@given(
    st.sampled_from([WindowSpec(Period.DAILY, time_zone="America/New_York"), WEEKLY]),
    st.lists(st.tuples(st.sampled_from(["ann", "bob", "cyd"]), st.integers(0, 21 * 24 * 3600 - 1),
                       st.integers(1, 9)), max_size=40),
    st.lists(st.tuples(st.integers(0, 21 * 24 * 3600 - 1), st.integers(0, 45)), max_size=4),
)  # fmt: skip
def test_every_period_holds_the_awards_of_its_time_before_its_cutoff(
    spec: WindowSpec, awards: list[tuple[str, int, int]], cutoffs: list[tuple[int, int]]
) -> None:
    window, lifecycle = encode_window(spec), LifecycleCodec()
    stream: list[tuple[bytes, bytes]] = []
    for n, (user, second, amount) in enumerate(awards):
        award = _award("b", window, user, f"m{n}", amount, SPAN_START + second * 1000)
        stream.append((totals_key("b", user), CODEC.encode(award)))
    closing: dict[str, int] = {}
    for second, position in sorted(cutoffs, key=lambda c: c[1], reverse=True):
        key = period_of(spec, SPAN_START + second * 1000).key
        marker = CutoffMarker(board_id=f"b@{key}", region="eu", closing_at_ms=1, written_at_ms=2)
        stream.insert(min(position, len(stream)), (cutoff_marker_key(f"b@{key}"), lifecycle.encode(marker)))
    for offset, (key_bytes, _) in enumerate(stream):
        if key_bytes.startswith(b"\x00cutoff|"):
            closing.setdefault(key_bytes.decode().split("@", 1)[1], offset)
    expected: dict[tuple[str, str], int] = {}
    late = 0
    for offset, (key_bytes, value) in enumerate(stream):
        if not key_bytes.startswith(b"\x00"):
            award = CODEC.award(value)
            period = period_of(spec, award.event_at_ms).key
            if period in closing and offset > closing[period]:
                late += 1
            else:
                expected[(period, award.user_id)] = expected.get((period, award.user_id), 0) + award.amount
    store = MemoryStore()
    done = _round(store, [(EU, _record(EU, i, k, v)) for i, (k, v) in enumerate(stream)])
    found = {(p, u): store.player((f"b@{p}", u)).total for p, u in expected}  # type: ignore[union-attr]
    assert found == expected
    reasons = [CODEC.reconciliation(v).reason for t, _, v in done.out if t == "t.reconciliation.v1"]
    assert reasons == ["late"] * late
