"""Records that only say time passed: what paces a live consumer's fetches as quiet."""

from __future__ import annotations

from schema.erasure import ERASURE_PREFIX
from schema.lifecycle import CUTOFF_PREFIX
from schema.records import COMPLETE_KEY, HEARTBEAT_KEY, only_time, totals_key, watermark_key


def test_heartbeats_and_watermarks_only_say_time_passed_and_every_other_record_is_work() -> None:
    assert only_time(HEARTBEAT_KEY) and only_time(watermark_key("eu"))
    for work in [totals_key("board", "ann"), CUTOFF_PREFIX + b"board", ERASURE_PREFIX + b"t", COMPLETE_KEY, None]:
        assert not only_time(work), work
