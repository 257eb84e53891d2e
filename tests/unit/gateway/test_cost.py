"""Query cost from the document alone: the documented table, list sizes, fragments, introspection depth."""

from __future__ import annotations

import pytest
from graphql import FragmentDefinitionNode, OperationDefinitionNode, get_introspection_query, parse

from gateway.api import build_schema
from gateway.core.cost import CostModel, Measure, measure
from regions.runtime.settings import Settings

SCHEMA = build_schema(Settings())._schema
MODEL = CostModel(max_boards=100, max_top_k=100, max_context_range=50)


def cost_of(query: str) -> Measure:
    document = parse(query)
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    [operation] = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    return measure(SCHEMA, operation, fragments, MODEL)


@pytest.mark.parametrize(
    ("query", "cost"),
    [
        ('{ leaderboard(id: "b") { id name status } }', 1),
        ('{ leaderboard(id: "b") { playerCount } }', 2),
        ('{ leaderboard(id: "b") { top { entries { rank userId score } } } }', 1 + 2 + 1),
        (
            '{ leaderboard(id: "b") { top(k: 100) { entries { profile { displayName } } } } }',
            1 + 2 + 1 + 100 * 5,
        ),
        (
            '{ leaderboard(id: "b") { context(userId: "u", range: 3) { above { userId } player { userId } } } }',
            1 + 2 + 1 + 1,
        ),
        (
            '{ leaderboard(id: "b") { context(userId: "u", range: 3) { below { profile { country } } } } }',
            1 + 2 + 1 + 3 * 5,
        ),
        (
            '{ leaderboard(id: "b") { top { entries { userId } asOf { positions { offset } } } } }',
            1 + 2 + 1 + 1 + 1,
        ),
        ('{ leaderboard(id: "b") { period { key status top { entries { userId } } } } }', 1 + 5 + 2 + 1),
        (
            '{ leaderboard(id: "b") { periods(first: 20) { key top(k: 5) { entries { profile { country } } } } } }',
            1 + 5 + 20 * (2 + 1 + 5 * 5),
        ),
        (
            '{ leaderboard(id: "b") { periods { result { entries(first: 3) { userId } } } } }',
            1 + 5 + 10 * (5 + 5),
        ),
        (
            '{ leaderboard(id: "b") { period(key: "2026-W49") { context(userId: "u", range: 2) { above { profile { country } } } } } }',
            1 + 5 + 2 + 1 + 2 * 5,
        ),
        (
            '{ leaderboard(id: "b") { players(userIds: ["a", "b"]) { entries { player { profile { country } } } } } }',
            1 + 4 + 1 + 2 * (1 + 5),
        ),
        (
            'query($u: [ID!]!) { leaderboard(id: "b") { period { players(userIds: $u) { entries { rankAmong } } } } }',
            1 + 5 + 4 + 1,
        ),
        ('{ leaderboard(id: "b") { entries { entries { userId } pageInfo { endCursor } } } }', 1 + 2 + 1 + 1),
        (
            '{ leaderboard(id: "b") { entries { entries { profile { country } } totalCount } } }',
            1 + 2 + 1 + 100 * 5,
        ),
        (
            '{ leaderboard(id: "b") { entries(first: 30, fromRank: 9000) { entries { profile { country } } } } }',
            1 + 2 + 1 + 30 * 5,
        ),
        (
            '{ leaderboard(id: "b") { period { entries(last: 7, before: "c") { entries { profile { country } } } } } }',
            1 + 5 + 2 + 1 + 7 * 5,
        ),
        ("{ leaderboards { id name } }", 10),
        (
            "{ leaderboards { top(k: 100) { entries { profile { displayName } } } } }",
            10 + 100 * (2 + 1 + 500),
        ),
    ],
)
def test_documented_costs(query: str, cost: int) -> None:
    assert cost_of(query).cost == cost


def test_a_list_size_from_a_variable_counts_at_its_cap() -> None:
    query = 'query($k: Int) { leaderboard(id: "b") { top(k: $k) { entries { profile { displayName } } } } }'
    assert cost_of(query).cost == 1 + 2 + 1 + 100 * 5
    listed = (
        'query($u: [ID!]!) { leaderboard(id: "b") { players(userIds: $u) { entries { player { rank } } } } }'
    )
    assert cost_of(listed).cost == 1 + 4 + 1 + 100 * 1


def test_a_page_size_from_a_variable_counts_at_its_cap() -> None:
    query = (
        'query($n: Int) { leaderboard(id: "b") { entries(last: $n) { entries { profile { country } } } } }'
    )
    assert cost_of(query).cost == 1 + 2 + 1 + 100 * 5


def test_aliases_and_fragments_are_counted_each_time_they_are_used() -> None:
    query = """
      fragment Page on RankPage { entries { profile { displayName } } }
      { leaderboard(id: "b") { a: top(k: 10) { ...Page } b: top(k: 20) { ... on RankPage { ...Page } } } }
    """
    assert cost_of(query).cost == 1 + (2 + 1 + 10 * 5) + (2 + 1 + 20 * 5)


def test_the_attack_of_fifteen_aliases_costs_far_more_than_a_page() -> None:
    attack = "{ " + " ".join(f"a{i}: leaderboards {{ top(k: 100) {{ entries {{ profile {{ displayName }} }} }} }}" for i in range(15)) + " }"  # fmt: skip
    assert cost_of(attack).cost == 15 * (10 + 100 * 503)


def test_introspection_costs_nothing_but_its_depth_is_measured() -> None:
    standard = cost_of(get_introspection_query())
    nested = cost_of(
        "{ __schema { types { fields { type { fields { type { fields { type { name } } } } } } } } }"
    )

    assert standard == Measure(0, 14)
    assert nested.introspection_depth == 8
    assert cost_of('{ __typename leaderboard(id: "b") { __typename } }') == Measure(1, 0)


def test_cyclic_fragments_do_not_loop() -> None:
    query = 'fragment A on Leaderboard { id ...B } fragment B on Leaderboard { ...A } { leaderboard(id: "b") { ...A } }'
    assert cost_of(query).cost == 1
