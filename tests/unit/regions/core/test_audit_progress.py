"""What a starting audit sink must check before writing: the intent in its group's last commit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.audit_progress import intent_metadata, unsure_before


def test_a_commit_with_an_intent_makes_the_records_up_to_it_unsure() -> None:
    assert unsure_before(100, intent_metadata(250)) == 250


def test_a_commit_without_an_intent_leaves_nothing_unsure() -> None:
    assert unsure_before(100, "") == 100
    assert unsure_before(100, "written by someone else") == 100


def test_a_malformed_intent_is_not_trusted_to_widen_anything() -> None:
    assert unsure_before(100, "audit:writing-before=soon") == 100


@given(committed=st.integers(0, 2**62), before=st.integers(0, 2**62))
def test_the_unsure_range_never_starts_before_the_commit_and_round_trips(committed: int, before: int) -> None:
    assert unsure_before(committed, intent_metadata(before)) == max(committed, before)
