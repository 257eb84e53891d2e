import msgspec
from aiokafka import ConsumerRecord

from regions.core.positions import SourcePosition
from regions.projector.totals import TotalsBatch
from schema.records import (
    WATERMARK_KEY,
    Codec,
    ExpiryReached,
    PlayerTotal,
    Watermark,
    totals_key,
    watermark_key,
)


def _record(offset: int, key: bytes, value: bytes) -> ConsumerRecord:
    return ConsumerRecord("totals", 0, offset, 0, 0, key, value, None, len(key), len(value), [])


def _total(user: str, version: int, total: int, **changes: object) -> PlayerTotal:
    fields: dict[str, object] = dict(
        board_id="b", user_id=user, total=total, version=version, reached="0" * 27,
        sort_order="DESC", tie_policy="USER_ID", source_partition=0, source_offset=version,
        event_id=f"e{version}",
    )  # fmt: skip
    return PlayerTotal(**{**fields, **changes})  # type: ignore[arg-type]


def _mark(
    region: str, partition: int, offset: int, accepted: int, heartbeat: int = 0, gaps: int = 0
) -> bytes:
    return Codec().encode(Watermark(source_partition=partition, source_offset=offset, accepted_at_ms=accepted,
                                    region=region, heartbeat_at_ms=heartbeat, gaps=gaps))  # fmt: skip


def test_batch_keeps_the_newest_version_and_the_furthest_watermark_of_each_region() -> None:
    codec, batch = Codec(), TotalsBatch("eu")
    batch.add([
        _record(0, totals_key("b", "u"), codec.encode(_total("u", 2, 20))),
        _record(1, totals_key("b", "u"), codec.encode(_total("u", 1, 10))),
        _record(3, watermark_key("eu"), _mark("eu", 0, 7, 5)),
        _record(4, watermark_key("eu"), _mark("eu", 0, 4, 3, heartbeat=9)),
        _record(5, watermark_key("us"), _mark("us", 0, 2, 8, gaps=1)),
        _record(6, WATERMARK_KEY, _mark("", 1, 3, 4)),  # written before watermarks named a region
    ])  # fmt: skip

    assert batch.latest[("b", "u")].total == 20
    assert batch.marks == {
        ("eu", 0): SourcePosition(7, 5, 9, 0),  # each field the furthest seen
        ("us", 0): SourcePosition(2, 8, 0, 1),
        ("eu", 1): SourcePosition(3, 4, 0, 0),
    }
    [work] = batch.by_board()
    assert (work.board_id, work.shards, [(t.user_id, t.version, t.score, t.member) for t in work.totals]) == (
        "b",
        1,
        [("u", 2, -20.0, "u")],
    )
    assert batch.unprojectable == []


def test_records_the_projection_cannot_use_are_set_aside_with_position_and_reason() -> None:
    codec, batch = Codec(), TotalsBatch()
    batch.add([
        _record(10, totals_key("b", "a"), codec.encode(_total("a", 1, 5))),
        _record(11, totals_key("b", "x"), codec.encode(_total("x", 1, 5, sort_order="SIDEWAYS"))),
        _record(12, totals_key("b", "y"), codec.encode(_total("y", 1, 5, tie_policy="LOUDEST"))),
        _record(13, totals_key("b", "z"), codec.encode(_total("z", 1, 2**53))),
        _record(14, totals_key("b", "w"), codec.encode(_total("w", 1, 5, user_id=""))),
        _record(15, totals_key("b", "v"), b"\xc1 not msgpack"),
        _record(16, totals_key("b", "t"), msgspec.msgpack.encode({"type": "total", "board_id": 3})),
        _record(17, totals_key("b", "c"), codec.encode(_total("c", 1, 7))),
    ])  # fmt: skip

    assert sorted(batch.latest) == [("b", "a"), ("b", "c")]
    found = [(u.where, u.key, u.reason) for u in batch.unprojectable]
    assert found == [
        ("totals:0:11", b"b|x", "invalid"),
        ("totals:0:12", b"b|y", "invalid"),
        ("totals:0:13", b"b|z", "invalid"),
        ("totals:0:14", b"b|w", "invalid"),
        ("totals:0:15", b"b|v", "undecodable"),
        ("totals:0:16", b"b|t", "invalid"),
    ]
    details = [u.detail for u in batch.unprojectable]
    assert details[0] == "Invalid enum value 'SIDEWAYS' - at `$.sort_order`"
    assert "$.tie_policy" in details[1] and "$.total" in details[2] and "$.user_id" in details[3]
    assert [w.board_id for w in batch.by_board()] == ["b"]  # what is left encodes without raising


def test_only_keeps_one_board_and_every_watermark() -> None:
    codec, batch = Codec(), TotalsBatch("eu")
    batch.add([
        _record(0, totals_key("b", "u"), codec.encode(_total("u", 1, 1))),
        _record(1, totals_key("o", "u"), codec.encode(_total("u", 1, 1, board_id="o"))),
        _record(2, watermark_key("us"), _mark("us", 3, 9, 1)),
    ])  # fmt: skip
    batch.only("o")

    assert list(batch.latest) == [("o", "u")] and batch.marks == {("us", 3): SourcePosition(9, 1)}


def test_a_board_rebuilt_alone_keeps_its_periods_and_removals_leave_no_member() -> None:
    codec, batch = Codec(), TotalsBatch("eu")
    batch.add([
        _record(0, b"k", codec.encode(_total("u", 1, 5, board_id="b@2026-11-30"))),
        _record(1, b"k", codec.encode(_total("u", 1, 5, board_id="bb@2026-11-30"))),
        _record(2, b"k", codec.encode(_total("v", 3, 0, board_id="b", removed=True))),
        _record(3, b"k", codec.encode(ExpiryReached(board_id="b", expired_through=1, source_region="eu",
                                                    source_partition=0, source_offset=2))),
    ])  # fmt: skip
    batch.only("b")
    assert sorted(batch.latest) == [("b", "v"), ("b@2026-11-30", "u")]
    [removed] = [w for w in batch.by_board() if w.board_id == "b"]
    assert [(t.user_id, t.version, t.member) for t in removed.totals] == [("v", 3, "")]
    assert batch.unprojectable == []


def test_a_candidate_keeps_its_verified_count_where_an_award_keeps_its_metadata() -> None:
    codec, batch = Codec(), TotalsBatch("eu")
    batch.add([
        _record(0, totals_key("tr", "x"), codec.encode(_total("x", 3, 12, board_id="tr", estimated=True, exact=10))),
        _record(1, totals_key("tr", "y"), codec.encode(_total("y", 3, 9, board_id="tr", estimated=True))),
        _record(2, totals_key("tr", "z"), codec.encode(_total("z", 3, 7, board_id="tr", estimated=True, exact=7, hidden=True))),
        _record(3, totals_key("b", "u"), codec.encode(_total("u", 1, 5, metadata='{"exact":1}'))),
    ])  # fmt: skip

    notes = {(w.board_id, t.user_id): t.metadata for w in batch.by_board() for t in w.totals}
    assert notes == {("tr", "x"): '{"exact":10}', ("tr", "y"): "", ("tr", "z"): "", ("b", "u"): '{"exact":1}'}
