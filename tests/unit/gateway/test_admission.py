"""The gateway's admission: queries up to their share, mutations into the reserved rest, and live
push paused from ``push_shed_at_operations`` on (counted) and resumed below it."""

from __future__ import annotations

import asyncio

from gateway import metrics
from gateway.admission import Admission
from gateway.core.admission import is_mutation
from regions.runtime.settings import GatewaySettings


def test_queries_are_shed_while_mutations_use_the_reserved_share() -> None:
    admission = Admission(
        GatewaySettings(
            max_concurrent_operations=3, reserved_for_mutations=1, push_shed_at_operations=1, max_loop_behind_ms=0
        )
    )
    assert admission.enter(mutation=False) and admission.enter(mutation=False)
    assert not admission.enter(mutation=False)
    assert admission.enter(mutation=True)
    assert not admission.enter(mutation=True)
    admission.leave()
    assert not admission.enter(mutation=False)  # still within the reserved share
    admission.leave()
    assert admission.enter(mutation=False)


async def test_push_pauses_at_its_threshold_and_resumes_below_it() -> None:
    admission = Admission(
        GatewaySettings(max_concurrent_operations=8, reserved_for_mutations=1, push_shed_at_operations=2)
    )
    paused = metrics.PUSH_SHED._value.get()
    admission.enter(mutation=False)
    assert admission.pushing
    admission.enter(mutation=False)
    assert not admission.pushing and metrics.PUSH_SHED._value.get() == paused + 1
    turn = asyncio.create_task(admission.push_turn())
    await asyncio.sleep(0)
    assert not turn.done()
    admission.leave()
    await asyncio.wait_for(turn, 1)
    assert admission.pushing


def test_a_mutation_is_told_from_a_query_by_the_operation_the_request_runs() -> None:
    document = 'query Q { leaderboards { id } } mutation M { closeLeaderboard(id: "b") { id } }'
    assert is_mutation('mutation { closeLeaderboard(id: "b") { id } }', None)
    assert is_mutation(document, "M") and not is_mutation(document, "Q")
    assert not is_mutation(document, None)  # ambiguous: the executor refuses it
    assert not is_mutation("{ leaderboards { id } }", None)
    assert not is_mutation("mutation {", None) and not is_mutation(None, None)
