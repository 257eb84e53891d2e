"""The erasure list read as a change log: whatever order the lanes' entries reach a reader's data
center in, and however its reads interleave with that, it ends with exactly the players whose last
change erases them, and never takes an entry past one it has not seen."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.erasure_changes import PAGE_SIZE, ErasureChange, ErasureListState, next_sequence, page_of

LANES = ("eu", "us", "ap")


@st.composite
def histories(draw: st.DrawFn) -> tuple[dict[str, list[ErasureChange]], set[str]]:
    """Changes of a few players (erased, lifted, erased again, ...), each asked in some region:
    the lanes as appended, and the players erased at the end."""
    lanes: dict[str, list[ErasureChange]] = {lane: [] for lane in LANES}
    versions: dict[str, int] = {}
    for _ in range(draw(st.integers(0, 30))):
        token = draw(st.sampled_from(["p1", "p2", "p3", "p4"]))
        lane = lanes[draw(st.sampled_from(LANES))]
        version = versions[token] = versions.get(token, 0) + 1
        lane.append(ErasureChange(len(lane), token, version, erased=version % 2 == 1))
    return lanes, {token for token, version in versions.items() if version % 2 == 1}


def _visible(arrived: set[tuple[str, int]], lane: str, entries: list[ErasureChange], cursor: int) -> list[ErasureChange]:
    """What a read of ``lane`` from ``cursor`` returns: the entries that reached the data center."""
    return [e for e in entries if e.sequence >= cursor and (lane, e.sequence) in arrived]


@given(histories(), st.data())
def test_any_arrival_order_and_reads_end_in_the_list_of_the_last_changes(
    history: tuple[dict[str, list[ErasureChange]], set[str]], data: st.DataObject
) -> None:
    lanes, erased = history
    everything = [(lane, e.sequence) for lane, entries in lanes.items() for e in entries]
    arrival = data.draw(st.permutations(everything))  # replication order across partitions: any
    state, arrived = ErasureListState(), set()
    for item in arrival:
        arrived.add(item)
        for lane in data.draw(st.lists(st.sampled_from(LANES), max_size=3)):  # a refresh, now and then
            state.advance(lane, _visible(arrived, lane, lanes[lane], state.cursor(lane)))
            missing = next((e.sequence for e in lanes[lane] if (lane, e.sequence) not in arrived), None)
            assert missing is None or state.cursor(lane) <= missing  # never past an entry not seen
    for lane in LANES:  # every entry arrived: the next refresh reads the rest
        state.advance(lane, _visible(arrived, lane, lanes[lane], state.cursor(lane)))
        assert state.cursor(lane) == len(lanes[lane])
    assert state.erased == erased


def test_a_change_older_than_one_taken_changes_nothing_and_a_replay_neither() -> None:
    state = ErasureListState()
    state.take_all([("p1", 3, False), ("p2", 0, True)])  # the table: p1 lifted at version 3, p2 from before versions
    assert state.advance("eu", [ErasureChange(0, "p1", 2, True), ErasureChange(1, "p2", 1, False)]) == 2
    assert state.erased == set()  # p1's erasure was lifted since; p2's lift is newer than the row
    assert state.advance("eu", [ErasureChange(0, "p1", 2, True), ErasureChange(1, "p2", 1, False)]) == 0
    assert state.advance("eu", [ErasureChange(2, "p1", 4, True), ErasureChange(4, "p3", 1, True)]) == 1
    assert state.erased == {"p1"} and state.cursor("eu") == 3  # sequence 3 is missing: p3 waits


def test_appends_fill_a_partition_then_start_the_next() -> None:
    assert next_sequence(0, None) == 0
    assert next_sequence(0, 41) == 42
    assert next_sequence(0, PAGE_SIZE - 1) is None  # full: the writer looks at partition 1
    assert next_sequence(1, None) == PAGE_SIZE
    assert [page_of(s) for s in (0, PAGE_SIZE - 1, PAGE_SIZE, 3 * PAGE_SIZE + 5)] == [0, 0, 1, 3]
