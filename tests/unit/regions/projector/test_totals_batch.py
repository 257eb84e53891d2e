from aiokafka import ConsumerRecord

from regions.projector.loop import TotalsBatch
from schema.records import WATERMARK_KEY, Codec, PlayerTotal, Watermark, totals_key


def _record(offset: int, key: bytes, value: bytes) -> ConsumerRecord:
    return ConsumerRecord("totals", 0, offset, 0, 0, key, value, None, len(key), len(value), [])


def _total(user: str, version: int, total: int) -> PlayerTotal:
    return PlayerTotal(board_id="b", user_id=user, total=total, version=version, reached="0" * 27,
                       sort_order="DESC", tie_policy="USER_ID", source_partition=0, source_offset=version,
                       event_id=f"e{version}")  # fmt: skip


def test_batch_keeps_the_newest_version_and_the_highest_watermark_and_skips_garbage() -> None:
    codec, batch = Codec(), TotalsBatch()
    batch.add(codec, [
        _record(0, totals_key("b", "u"), codec.encode(_total("u", 2, 20))),
        _record(1, totals_key("b", "u"), codec.encode(_total("u", 1, 10))),
        _record(2, totals_key("b", "u"), b"\xc1 not msgpack"),
        _record(3, WATERMARK_KEY, codec.encode(Watermark(source_partition=0, source_offset=7, accepted_at_ms=5))),
        _record(4, WATERMARK_KEY, codec.encode(Watermark(source_partition=0, source_offset=4, accepted_at_ms=3))),
    ])  # fmt: skip

    assert batch.latest[("b", "u")].total == 20
    assert (batch.marks, batch.newest_accepted_ms) == ({0: 7}, 5)
    [(board, _, totals)] = batch.by_board("lb")
    assert (board, [(t.user_id, t.version, t.score, t.member) for t in totals]) == (
        "b",
        [("u", 2, -20.0, "u")],
    )
