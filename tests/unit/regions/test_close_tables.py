"""The close state machine of boards and periods in Cassandra: statements are built only along the
lifecycle's transitions, conditional on the status they leave, on each table's own key."""

from __future__ import annotations

import pytest

from regions.core.boards import BoardStatus
from regions.core.lifecycle import TRANSITIONS, IllegalTransition
from regions.stores.cassandra.lifecycle import BOARD_CLOSES
from regions.stores.cassandra.periods import PERIOD_CLOSES

PAIRS = [(a, b) for a in BoardStatus for b in BoardStatus]


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_a_transition_is_built_only_when_the_lifecycle_allows_it(
    source: BoardStatus, target: BoardStatus
) -> None:
    if target in TRANSITIONS[source]:
        cql = BOARD_CLOSES.transition(source, target, "closed_at = ?")
        assert cql.endswith(f"WHERE board_id = ? IF status = '{source}'")
        assert f"SET status = '{target}', closed_at = ?" in cql
    else:
        with pytest.raises(IllegalTransition):
            BOARD_CLOSES.transition(source, target, "closed_at = ?")


def test_each_table_is_keyed_by_its_own_primary_key() -> None:
    assert BOARD_CLOSES.key_of("b1") == ("b1",)
    assert PERIOD_CLOSES.key_of("b1@2026-W49") == ("b1", "2026-W49")
    for table in (BOARD_CLOSES, PERIOD_CLOSES):
        finish = table.statements()["close.finish"]
        assert finish.startswith(f"UPDATE {table.name} SET status = 'CLOSED'")
        assert finish.endswith(f"WHERE {' AND '.join(f'{c} = ?' for c in table.key)} IF status = 'CLOSING'")
