"""When an erasure's row has work left for a lifecycle worker (``ErasureEntry.outstanding``): what a
sweep queues and what asking again queues."""

from __future__ import annotations

from datetime import UTC, datetime

from regions.stores.cassandra.erasures import ErasureEntry

AT = datetime(2026, 1, 1, tzinfo=UTC)
ASKED = ErasureEntry("t", "ann", "deleted", "eu", AT, version=1, logged=1)


def test_an_erasure_has_work_left_until_done() -> None:
    assert ASKED.outstanding
    written = ErasureEntry("t", "ann", "deleted", "eu", AT, written={0: 3}, version=1, logged=1)
    assert written.outstanding
    done = ErasureEntry("t", None, "deleted", "eu", AT, completed_at=AT, written={0: 3}, version=1, logged=1)
    assert not done.outstanding


def test_a_lift_has_work_left_only_when_the_erasure_wrote_records_and_the_lift_did_not() -> None:
    lifted = ErasureEntry("t", "ann", "deleted", "eu", AT, lifted_at=AT, version=2, logged=2)
    assert not lifted.outstanding  # no record was written: nothing to tell the processors
    told_to_erase = ErasureEntry("t", None, "d", "eu", AT, written={0: 3}, lifted_at=AT, version=2, logged=2)
    assert told_to_erase.outstanding
    told_both = ErasureEntry("t", None, "d", "eu", AT, written={0: 3}, lifted_at=AT, lift_written={0: 5},
                             version=2, logged=2)  # fmt: skip
    assert not told_both.outstanding


def test_a_change_not_in_the_log_is_work_left_whatever_else() -> None:
    done = ErasureEntry("t", None, "deleted", "eu", AT, completed_at=AT, version=1, logged=None)
    assert done.unlogged and done.outstanding
    before_versions = ErasureEntry("t", None, "deleted", "eu", AT, completed_at=AT)
    assert not before_versions.outstanding
