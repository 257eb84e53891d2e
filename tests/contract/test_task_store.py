"""The task store's contract, run against the in-memory store and the RocksDB one alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from regions.core.aggregation import PlayerState, Seen
from regions.core.candidates import CandidateList
from regions.core.moderation import Moderation
from regions.core.positions import SourcePosition
from regions.processor.restore import stale_reason
from regions.stores.rocksdb import RocksStore, store_options
from regions.stores.task_state import STORE_FORMAT, MemoryStore, StoreBatch, StoreIdentity, TaskStore
from schema.lifecycle import CorrectionRecord, HeldCorrection
from schema.records import pack_seen

OPTIONS = store_options(cache_mib=8, write_buffer_mib=4)

IDENTITY = StoreIdentity("cluster-a", ("lb.totals.v1", "lb.dedupe.v1"), 3)
EVENT = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"


def _held(user: str, version: int) -> HeldCorrection:
    record = CorrectionRecord(board_id="b", correction_id="c1", user_id=user, score=-4, result_version=version,
                              created_at_ms=5, region="eu", sort_order="DESC", tie_policy="USER_ID",
                              regions=["eu", "us"])  # fmt: skip
    return HeldCorrection(record, "lb.awards.v1", 12, 12)


HELD_1, HELD_2 = _held("ann", 2), _held("bob", 3)


class TaskStoreContract:
    """Subclasses provide ``store`` (and ``reopen`` for stores that survive a restart)."""

    @pytest.fixture
    def store(self) -> Iterator[TaskStore]:
        raise NotImplementedError

    def test_a_new_store_reflects_nothing(self, store: TaskStore) -> None:
        assert store.identity() is None
        assert store.changelog_positions() == {}
        assert store.player(("b", "u")) is None and store.seen(EVENT) is None
        assert store.sources() == {} and store.complete_since_ms() is None

    def test_a_players_metadata_and_notes_are_read_back(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        held = PlayerState(9, 3, "k2", contributions=(("k1", 4), ("k2", 9)), metadata='{"m":2}',
                           notes=(("k1", '{"m":1}'), ("k2", '{"m":2}')))  # fmt: skip
        no_holder = PlayerState(4, 2, "k3", contributions=(("k1", 1), ("k3", 3)), notes=(("k1", '{"m":1}'),))
        store.write(StoreBatch(players={("b", "ann"): held, ("b", "bob"): no_holder}))
        assert (store.player(("b", "ann")), store.player(("b", "bob"))) == (held, no_holder)

    def test_sketch_blocks_and_candidate_lists_are_read_back(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        assert store.sketch_block(("tr", 0, 0)) is None and store.candidates("tr") == CandidateList()
        listed = CandidateList(3, 40, (("song|1", 9), ("s2", 7)), ((9, True), (2, False)), False)
        store.write(StoreBatch(sketch={("tr", 0, 0): (1, 0, 2**40), ("tr@2026-12-01", 6, 42): (5,)},
                               candidates={"tr": listed}))  # fmt: skip
        store.write(StoreBatch(sketch={("tr", 0, 0): (2, 0, 2**40)}))
        assert store.sketch_block(("tr", 0, 0)) == (2, 0, 2**40)
        assert store.sketch_block(("tr@2026-12-01", 6, 42)) == (5,) and store.sketch_block(("tr", 1, 0)) is None
        assert store.candidates("tr") == listed and store.candidates("tr@2026-12-01") == CandidateList()
        older = CandidateList(1, 5, (("s2", 5),))  # restored from a record written before exact counts
        store.write(StoreBatch(candidates={"tr@2026-12-01": older}))
        assert store.candidates("tr@2026-12-01") == older and older.exact_of() == {"s2": (0, False)}

    def test_the_lists_an_item_is_on_follow_its_joins_and_leaves(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        both = CandidateList(1, 9, (("song|1", 5), ("s2", 4)), ((5, True), (4, True)))
        store.write(StoreBatch(candidates={"tr": both, "tr@2026-12-01": CandidateList(1, 3, (("s2", 3),))}))
        assert store.candidate_lists_of("s2") == ["tr", "tr@2026-12-01"]
        assert store.candidate_lists_of("song|1") == ["tr"] and store.candidate_lists_of("s") == []
        store.write(StoreBatch(candidates={"tr": CandidateList(2, 9, (("song|1", 5),), ((5, True),), False)}))
        assert store.candidate_lists_of("s2") == ["tr@2026-12-01"] and store.candidate_lists_of("song|1") == ["tr"]
        store.reset(IDENTITY)
        assert store.candidate_lists_of("s2") == []

    def test_a_batch_is_read_back_whole(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(
            players={("b", "ann"): PlayerState(5, 1, "r1"), ("b", "bob|x"): PlayerState(-3, 2, "r2")},
            seen={EVENT: Seen("00112233aabbccdd", 1_000)},
            sources={"eu": SourcePosition(7, 1_000, 2_000, 0), "us": SourcePosition(3, 900, 0, 1)},
            changelog={"lb.totals.v1": 10, "lb.dedupe.v1": 4},
        ))  # fmt: skip
        assert store.identity() == IDENTITY
        assert store.player(("b", "ann")) == PlayerState(5, 1, "r1")
        assert store.player(("b", "bob|x")) == PlayerState(-3, 2, "r2")
        assert store.seen(EVENT) == Seen("00112233aabbccdd", 1_000)
        assert store.sources() == {
            "eu": SourcePosition(7, 1_000, 2_000, 0),
            "us": SourcePosition(3, 900, 0, 1),
        }
        assert store.changelog_positions() == {"lb.totals.v1": 10, "lb.dedupe.v1": 4}
        assert store.players_count() == 2

    def test_changelog_positions_of_topics_not_written_stay(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(changelog={"lb.totals.v1": 10, "lb.dedupe.v1": 4}))
        store.write(StoreBatch(changelog={"lb.totals.v1": 12}))
        assert store.changelog_positions() == {"lb.totals.v1": 12, "lb.dedupe.v1": 4}

    def test_reset_forgets_everything_but_the_new_identity(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(players={("b", "u"): PlayerState(1, 1, "r")}, seen={EVENT: Seen("00" * 8, 1)},
                               sources={"eu": SourcePosition(1)}, changelog={"t": 3}, complete_since_ms=5))  # fmt: skip
        other = StoreIdentity("cluster-b", ("x",), 0)
        store.reset(other)
        assert store.identity() == other
        assert store.player(("b", "u")) is None and store.seen(EVENT) is None
        assert store.sources() == {} and store.changelog_positions() == {}
        assert store.complete_since_ms() is None and store.players_count() == 0

    def test_forgetting_drops_the_oldest_copies_and_says_so(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(seen={EVENT: Seen("00" * 8, 100, "eu", 7), OTHER: Seen("11" * 8, -5)}))
        assert store.oldest_seen(100, 10) == [(OTHER, -5)]
        assert store.oldest_seen(101, 1) == [(OTHER, -5)]
        store.write(StoreBatch(forgotten={bytes.fromhex(OTHER): -5}, complete_since_ms=100))
        assert store.seen(OTHER) is None and store.seen(EVENT) == Seen("00" * 8, 100, "eu", 7)
        assert store.oldest_seen(10**6, 10) == [(EVENT, 100)]
        assert store.complete_since_ms() == 100
        store.write(StoreBatch(complete_since_ms=50))
        assert store.complete_since_ms() == 100  # never lowered

    def test_a_replaced_copy_is_not_forgotten_by_its_old_time(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(seen={EVENT: Seen("00" * 8, 100)}))
        store.write(StoreBatch(seen={EVENT: Seen("00" * 8, 900)}))
        old = [entry for entry in store.oldest_seen(500, 10)]
        assert old in ([], [(EVENT, 100)])  # an index entry of the replaced copy may be listed
        store.write(StoreBatch(forgotten={bytes.fromhex(EVENT): 100}))
        assert store.seen(EVENT) == Seen("00" * 8, 900)
        assert store.oldest_seen(500, 10) == []

    def test_a_tombstone_forgets_whatever_copy_is_held(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(seen={EVENT: Seen("00" * 8, 100)}))
        store.write(StoreBatch(forgotten={bytes.fromhex(EVENT): None}, seen={OTHER: Seen("11" * 8, 5)}))
        assert store.seen(EVENT) is None and store.seen(OTHER) == Seen("11" * 8, 5)
        store.write(StoreBatch(forgotten={bytes.fromhex(OTHER): None}, seen={OTHER: Seen("22" * 8, 6)}))
        assert store.seen(OTHER) == Seen("22" * 8, 6)  # forgotten, then remembered anew in one batch

    def test_the_first_cutoff_stays_and_reset_forgets_it(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(cutoffs={("b", "eu"): 7}))
        store.write(StoreBatch(cutoffs={("b", "eu"): 9, ("b", "us"): 3}))
        assert store.cutoff(("b", "eu")) == 7 and store.cutoff(("b", "us")) == 3
        assert store.cutoff(("c", "eu")) is None
        store.reset(IDENTITY)
        assert store.cutoff(("b", "eu")) is None

    def test_packed_dedupe_records_read_back_like_decoded_ones_and_purge_alike(
        self, store: TaskStore
    ) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(packed_seen={bytes.fromhex(EVENT): pack_seen("00112233aabbccdd", -7),
                                            bytes.fromhex(OTHER): pack_seen("ffeeddccbbaa9988", 2**40)}),
                    bulk=True)  # fmt: skip
        store.flush()
        assert store.seen(EVENT) == Seen("00112233aabbccdd", -7)
        assert store.seen(OTHER) == Seen("ffeeddccbbaa9988", 2**40)
        assert store.oldest_seen(0, 10) == [(EVENT, -7)]  # the index orders by time: a negative one too
        store.write(
            StoreBatch(packed_seen={bytes.fromhex(EVENT): pack_seen("00112233aabbccdd", 3, "us", -9)})
        )
        assert store.seen(EVENT) == Seen("00112233aabbccdd", 3, "us", -9)
        assert (EVENT, 3) in store.oldest_seen(4, 10) and (OTHER, 2**40) not in store.oldest_seen(4, 10)

    def test_held_corrections_are_replaced_whole_and_an_empty_list_removes_them(
        self, store: TaskStore
    ) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(held={"b": (HELD_1,), "c": (HELD_1,)}))
        store.write(StoreBatch(held={"b": (HELD_1, HELD_2)}))
        assert store.held("b") == (HELD_1, HELD_2) and store.held("c") == (HELD_1,)
        store.write(StoreBatch(held={"b": ()}))
        assert store.held("b") == () and store.held("c") == (HELD_1,) and store.held("none") == ()
        store.reset(IDENTITY)
        assert store.held("c") == ()

    def test_moderation_reads_back_per_board_and_player_and_reset_forgets_it(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(moderation={("b", "u|x"): Moderation(1, True), ("c", "u|x"): Moderation(2, True)}))
        store.write(StoreBatch(moderation={("b", "u|x"): Moderation(3, False)}))
        assert store.moderation(("b", "u|x")) == Moderation(3, False)
        assert store.moderation(("c", "u|x")) == Moderation(2, True) and store.moderation(("b", "v")) is None
        store.reset(IDENTITY)
        assert store.moderation(("c", "u|x")) is None

    def test_a_players_states_are_found_by_user_and_an_erasure_removes_them(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        players = {("b", "u|x"): PlayerState(1, 1, "r"), ("c@2026-12-01", "u|x"): PlayerState(2, 1, "r"),
                   ("b", "u"): PlayerState(3, 1, "r")}  # fmt: skip
        store.write(StoreBatch(players=players, moderation={("b", "u|x"): Moderation(1, True)}))
        assert store.states_of("u|x") == [("b", "u|x"), ("c@2026-12-01", "u|x")] and store.states_of("u") == [("b", "u")]
        store.write(StoreBatch(erased_players={("b", "u|x"), ("c@2026-12-01", "u|x")}, erased={"t1": True, "t2": True}))
        assert store.states_of("u|x") == [] and store.player(("b", "u|x")) is None
        assert store.moderation(("b", "u|x")) is None and store.player(("b", "u")) == PlayerState(3, 1, "r")
        assert store.erased("t1") and store.erased("t2") and not store.erased("t3")
        store.write(StoreBatch(erased={"t1": False}))
        assert not store.erased("t1") and store.erased("t2")

    def test_the_completeness_bound_only_rises(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        store.write(StoreBatch(complete_since_ms=10))
        store.write(StoreBatch(complete_since_ms=5))
        assert store.complete_since_ms() == 10

    def test_rolling_buckets_the_day_index_and_expired_days_read_back(self, store: TaskStore) -> None:
        store.reset(IDENTITY)
        assert store.format() == STORE_FORMAT and store.expired_through("r") is None
        buckets = ((739_700, 5, "k1"), (739_702, -2, "k2"))
        store.write(StoreBatch(
            players={("r", "ann"): PlayerState(3, 2, "k2", buckets)},
            days_added={("r", 739_700, "ann"), ("r", 739_702, "ann"), ("r", 739_701, "bob"), ("q", 739_700, "cy")},
            expired={"r": 739_699},
        ))  # fmt: skip
        assert store.player(("r", "ann")) == PlayerState(3, 2, "k2", buckets)
        assert store.players_of_days("r", None, 739_701) == [("r", 739_700, "ann"), ("r", 739_701, "bob")]
        assert store.players_of_days("r", 739_700, 739_702) == [("r", 739_701, "bob"), ("r", 739_702, "ann")]
        store.write(StoreBatch(days_removed={("r", 739_701, "bob")}, expired={"r": 739_701}))
        store.write(StoreBatch(expired={"r": 739_700}))  # days only expire forward
        assert store.expired_through("r") == 739_701 and store.expired_through("q") is None
        assert store.players_of_days("r", None, 739_800) == [("r", 739_700, "ann"), ("r", 739_702, "ann")]
        store.reset(IDENTITY)
        assert store.players_of_days("r", None, 739_800) == [] and store.expired_through("r") is None


class TestMemoryStore(TaskStoreContract):
    @pytest.fixture
    def store(self) -> Iterator[TaskStore]:
        yield MemoryStore()


class TestRocksStore(TaskStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[TaskStore]:
        store = RocksStore(tmp_path / "p3", OPTIONS)
        yield store
        store.close()

    def test_a_flushed_bulk_write_survives_a_reopen(self, tmp_path: Path) -> None:
        store = RocksStore(tmp_path / "p3", OPTIONS)
        store.reset(IDENTITY)
        store.write(StoreBatch(players={("b", "u"): PlayerState(4, 2, "r")}, changelog={"t": 9}), bulk=True)
        store.flush()
        store.close()
        again = RocksStore(tmp_path / "p3", OPTIONS)
        try:
            assert again.changelog_positions() == {"t": 9} and again.player(("b", "u")) == PlayerState(
                4, 2, "r"
            )
        finally:
            again.close()

    def test_state_survives_a_reopen(self, tmp_path: Path) -> None:
        store = RocksStore(tmp_path / "p3", OPTIONS)
        store.reset(IDENTITY)
        store.write(StoreBatch(players={("b", "u"): PlayerState(1, 1, "r")}, changelog={"t": 3},
                               held={"b": (HELD_1,)}, moderation={("b", "u"): Moderation(4, True)},
                               cutoffs={("b", "eu"): 7, ("b", "us"): -1}))  # fmt: skip
        store.close()
        again = RocksStore(tmp_path / "p3", OPTIONS)
        try:
            assert again.identity() == IDENTITY and again.changelog_positions() == {"t": 3}
            assert again.player(("b", "u")) == PlayerState(1, 1, "r")
            assert again.held("b") == (HELD_1,) and again.moderation(("b", "u")) == Moderation(4, True)
            assert (again.cutoff(("b", "eu")), again.cutoff(("b", "us")), again.cutoff(("c", "eu"))) == (7, -1, None)
            again.write(StoreBatch(cutoffs={("b", "eu"): 9}))
            assert again.cutoff(("b", "eu")) == 7  # the first marker stays, across the reopen too
        finally:
            again.close()

    def test_a_store_of_an_older_format_is_restored_in_full(self, tmp_path: Path) -> None:
        store = RocksStore(tmp_path / "p3", OPTIONS)
        try:
            store.reset(IDENTITY)
            ends = dict.fromkeys(IDENTITY.changelogs, 0)
            assert stale_reason(store, IDENTITY, ends, ends) == ""
            store._db.delete(b"mfv")  # as written before formats were recorded
            assert store.format() == 1
            assert "format 1" in stale_reason(store, IDENTITY, ends, ends)
        finally:
            store.close()
