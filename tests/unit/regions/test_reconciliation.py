"""Reconciliation entries described for people."""

from __future__ import annotations

from regions.cli.reconciliation import describe
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent, Reconciliation

AWARD = AwardEvent(
    event_id=event_id("weekly", "m1", "ann", "kill"), digest=payload_digest(5, None), board_id="weekly",
    match_id="m1", user_id="ann", award_type="kill", amount=5, occurred_at_ms=None, region="eu",
    accepted_at_ms=0, aggregation="SUM", sort_order="DESC", tie_policy="USER_ID",
)  # fmt: skip


def test_an_entry_names_time_reason_board_user_event_position_and_detail() -> None:
    entry = Reconciliation(reason="conflicting_repeat", detail="applied with digest ab", award=AWARD,
                           source_partition=3, source_offset=120, source_topic="lb.awards.v1")  # fmt: skip
    assert describe(1_767_225_600_123, b"weekly|ann", entry, "lb.awards.v1").splitlines() == [
        f"2026-01-01 00:00:00.123Z  conflicting_repeat  board=weekly user=ann event={AWARD.event_id} "
        "at lb.awards.v1:3:120",
        "    applied with digest ab",
    ]


def test_an_undecodable_record_is_described_from_its_key_and_size() -> None:
    entry = Reconciliation(reason="undecodable", detail="expected object", award=None, source_partition=0,
                           source_offset=7, raw=b"\x93abc")  # fmt: skip
    first, second = describe(0, b"weekly|ann", entry, "lb.awards.v1").splitlines()
    assert first.endswith("undecodable  board=weekly user=ann event=- at lb.awards.v1:0:7")
    assert second == "    expected object (raw record: 4 bytes)"
