from gateway.core.updates import (
    Coalescer,
    Offered,
    PlayerState,
    RankChange,
    ResyncNeeded,
    ScoreUpdate,
    StatusChange,
    TopKChange,
    player_updates,
    top_update,
)
from regions.core.reads import AsOf

AS_OF = AsOf("local", {("local", 0): 10}, 1_700_000_000_000, False)


def score(seq: int, value: int = 5) -> ScoreUpdate:
    return ScoreUpdate("b", "alice", value, 1, seq, seq, AS_OF)


def test_new_version_gives_score_updated_and_a_moved_rank_gives_rank_changed() -> None:
    before, after = PlayerState(3, 10, 1), PlayerState(1, 50, 2)

    updates = player_updates("b", "alice", before, after, 7, AS_OF)

    assert updates == [
        ScoreUpdate("b", "alice", 50, 1, 2, 7, AS_OF),
        RankChange("b", "alice", 3, 1, 7, AS_OF),
    ]


def test_rank_pushed_down_by_others_gives_only_rank_changed() -> None:
    updates = player_updates("b", "alice", PlayerState(1, 50, 2), PlayerState(2, 50, 2), 8, AS_OF)

    assert updates == [RankChange("b", "alice", 1, 2, 8, AS_OF)]


def test_first_score_of_a_player_without_one() -> None:
    updates = player_updates("b", "alice", PlayerState(), PlayerState(4, 9, 1), 3, AS_OF)

    assert [type(u) for u in updates] == [ScoreUpdate, RankChange]
    assert updates[1] == RankChange("b", "alice", None, 4, 3, AS_OF)


def test_nothing_changed_gives_nothing() -> None:
    state = PlayerState(2, 9, 1)
    assert player_updates("b", "alice", state, state, 3, AS_OF) == []
    assert top_update("b", (("a", 1),), (("a", 1),), 3, AS_OF) is None


def test_top_k_changed_when_members_or_scores_differ() -> None:
    assert top_update("b", (("a", 2),), (("a", 3),), 4, AS_OF) == TopKChange("b", 10, 4, AS_OF)
    assert top_update("b", (("a", 2),), (("c", 2),), 4, AS_OF) is not None


def test_coalescer_keeps_only_the_latest_of_each_kind() -> None:
    box = Coalescer("b", resync_after=100)
    assert box.offer(score(1)) is Offered.QUEUED
    assert box.offer(score(2)) is Offered.COALESCED
    box.offer(TopKChange("b", 10, 2, AS_OF))

    drained = box.drain()

    assert drained == [score(2), TopKChange("b", 10, 2, AS_OF)]
    assert box.drain() == []


def test_coalesced_rank_changes_keep_the_first_old_rank() -> None:
    box = Coalescer("b", resync_after=100)
    box.offer(RankChange("b", "alice", 5, 3, 1, AS_OF))
    box.offer(RankChange("b", "alice", 3, 2, 2, AS_OF))

    assert box.drain() == [RankChange("b", "alice", 5, 2, 2, AS_OF)]


def test_rank_changes_that_cancel_out_are_dropped() -> None:
    box = Coalescer("b", resync_after=100)
    box.offer(RankChange("b", "alice", 5, 3, 1, AS_OF))
    box.offer(RankChange("b", "alice", 3, 5, 2, AS_OF))

    assert box.drain() == []


def test_a_subscriber_that_falls_behind_gets_one_resync_and_memory_stays_bounded() -> None:
    box = Coalescer("b", resync_after=10)
    outcomes = [box.offer(score(i)) for i in range(1, 1000)]

    assert Offered.RESYNC in outcomes
    assert len(box) <= 4
    drained = box.drain()
    assert isinstance(drained[0], ResyncNeeded)
    assert drained[0].reason == "slow_subscriber"


def test_a_slow_subscriber_keeps_the_boards_latest_status_through_its_resync() -> None:
    box = Coalescer("b", resync_after=3)
    box.offer(StatusChange("b", "CLOSING", None, 1))
    box.offer(StatusChange("b", "CLOSED", 1, 2))
    outcomes = [box.offer(score(i)) for i in range(3, 6)]

    assert Offered.RESYNC in outcomes
    drained = box.drain()
    assert [type(u).__name__ for u in drained] == ["ResyncNeeded", "StatusChange"]
    assert drained[1] == StatusChange("b", "CLOSED", 1, 2)
