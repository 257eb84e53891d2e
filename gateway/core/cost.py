"""What an operation may cost, measured from its document before it runs; and how deep its
introspection goes. Pure: it reads the schema and the parsed document only.

Costs (a unit is about one small object resolved and serialized):

| field | cost |
|---|---|
| a field returning an object (``Leaderboard``, ``RankPage``, ``RankedPlayer``, ``AsOf``, ...) | 1 |
| a scalar or enum field (``rank``, ``score``, ``userId``, ``status``, ...) | 0 |
| ``RankedPlayer.sharedRank``, ``topPercent`` | 0 (from the read that ranks; an archive page's tie search is a few chunk reads once per page, within ``BoardResult.entries``) |
| ``Leaderboard.playerCount`` | 1 (a Redis read) |
| ``Leaderboard.top``, ``player``, ``context``, ``entries`` | 2 (a Redis round trip) |
| ``RankedPlayer.profile`` | 5 (its share of a Cassandra lookup) |
| ``Leaderboard.result``, ``BoardResult.entries`` | 5 (a Cassandra read) |
| ``Leaderboard.period``, ``Leaderboard.periods`` | 5 (a Cassandra read of period rows) |
| ``LeaderboardPeriod.top``, ``player``, ``context``, ``entries`` | 2; ``playerCount`` 1; ``result`` 5 (as the board's) |
| ``Leaderboard.players``, ``LeaderboardPeriod.players`` | 4 (a Redis round trip, two on a sharded board) |
| ``Query.leaderboards`` | 10 (a catalog scan) |
| ``Query.moderation``, ``Query.erasure`` | 5 (a Cassandra read) |
| ``Query.playerExport`` | 50 (reads of every board and the player's rows) |

A list field counts once, and what it selects as many times as the list may be long: ``top(k)``
sizes its ``entries`` by ``k`` (default 10), a page ``entries(first | last)`` like a top of the same
size (default 100), ``context(range)`` sizes ``above`` and ``below`` by ``range`` (default 4),
``players(userIds)`` sizes its ``entries`` by the ids listed (a variable:
``gateway.max_listed_players``), ``BoardResult.entries(first)`` is itself a list of ``first`` (default 100)
players, ``moderation(first)`` a list of ``first`` (default 50) actions, ``Leaderboard.periods(first)`` a list
of ``first`` (default 10) periods (the same for a
period's ``top`` and ``context``), and ``leaderboards`` is sized by the configured bound on the number
of boards. So ``top(k: 100) { entries { profile { displayName } } }`` costs 2 + 1 + 100 * 5 = 503. A list
size given by a variable counts at its cap (the cost is decided before variables are known, so
that a validated document can be cached). A fragment spread on a union counts every member.

Introspection fields (``__schema``, ``__type``) cost nothing, but their nesting is measured:
introspection types refer to each other, so depth is what bounds their work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLNamedType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    is_composite_type,
)
from graphql.type.definition import GraphQLInterfaceType, GraphQLObjectType

from regions.core.moderation import MAX_PAGE as MODERATION_PAGE

FIELD_COSTS: Mapping[tuple[str, str], int] = {
    ("Leaderboard", "playerCount"): 1,
    ("Leaderboard", "top"): 2,
    ("Leaderboard", "player"): 2,
    ("Leaderboard", "context"): 2,
    ("Leaderboard", "entries"): 2,
    ("Leaderboard", "result"): 5,
    ("BoardResult", "entries"): 5,
    ("RankedPlayer", "profile"): 5,
    ("Leaderboard", "period"): 5,
    ("Leaderboard", "periods"): 5,
    ("LeaderboardPeriod", "playerCount"): 1,
    ("LeaderboardPeriod", "top"): 2,
    ("LeaderboardPeriod", "player"): 2,
    ("LeaderboardPeriod", "context"): 2,
    ("LeaderboardPeriod", "entries"): 2,
    ("LeaderboardPeriod", "result"): 5,
    ("Leaderboard", "players"): 4,
    ("LeaderboardPeriod", "players"): 4,
    ("Query", "leaderboards"): 10,
    ("Query", "moderation"): 5,
    ("Query", "erasure"): 5,
    ("Query", "playerExport"): 50,
}
RANKED = ("Leaderboard", "LeaderboardPeriod")  # types with top(k) and context(range)


@dataclass(frozen=True, slots=True)
class SlicedList:
    """A field whose ``argument`` sizes the lists it returns in ``sized_fields`` (none: the field is
    itself the list)."""

    argument: str
    default: int
    cap: int
    sized_fields: tuple[str, ...]
    alternative: str | None = None  # another argument that sizes it (never given with ``argument``)


@dataclass(frozen=True, slots=True)
class CostModel:
    max_boards: int  # bound on the boards ``leaderboards`` returns
    max_top_k: int
    max_context_range: int
    max_listed_players: int = 100
    field_costs: Mapping[tuple[str, str], int] = field(default_factory=lambda: FIELD_COSTS)

    def sliced(self, parent: str, name: str) -> SlicedList | None:
        if parent in RANKED and name == "top":
            return SlicedList("k", 10, self.max_top_k, ("entries",))
        if parent in RANKED and name == "entries":
            return SlicedList("first", min(100, self.max_top_k), self.max_top_k, ("entries",), "last")
        if parent in RANKED and name == "context":
            return SlicedList("range", 4, self.max_context_range, ("above", "below"))
        if parent in RANKED and name == "players":
            return SlicedList("userIds", 1, self.max_listed_players, ("entries",))
        if (parent, name) == ("BoardResult", "entries"):
            return SlicedList("first", 100, self.max_top_k, ())
        if (parent, name) == ("Query", "moderation"):
            return SlicedList("first", 50, MODERATION_PAGE, ())
        if (parent, name) == ("Leaderboard", "periods"):
            return SlicedList("first", 10, self.max_top_k, ())
        return None

    def bound(self, parent: str, name: str) -> int:
        return self.max_boards if (parent, name) == ("Query", "leaderboards") else 1


@dataclass(frozen=True, slots=True)
class Measure:
    cost: int
    introspection_depth: int


def measure(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    model: CostModel,
) -> Measure:
    root = schema.get_root_type(operation.operation)
    if root is None:
        return Measure(0, 0)
    return _Walk(schema, fragments, model).selections(root, operation.selection_set, {}, frozenset())


@dataclass(slots=True)
class _Walk:
    schema: GraphQLSchema
    fragments: Mapping[str, FragmentDefinitionNode]
    model: CostModel

    def selections(
        self,
        parent: GraphQLNamedType,
        selection_set: SelectionSetNode,
        sizes: Mapping[str, int],
        seen: frozenset[str],
    ) -> Measure:
        cost, depth = 0, 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                part = self.field(parent, selection, sizes)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                on = self.schema.get_type(condition.name.value) if condition else parent
                part = self.selections(on or parent, selection.selection_set, sizes, seen)
            elif isinstance(selection, FragmentSpreadNode):
                part = self.spread(parent, selection.name.value, sizes, seen)
            else:  # pragma: no cover - graphql-core has no other selection
                continue
            cost, depth = cost + part.cost, max(depth, part.introspection_depth)
        return Measure(cost, depth)

    def spread(
        self, parent: GraphQLNamedType, name: str, sizes: Mapping[str, int], seen: frozenset[str]
    ) -> Measure:
        fragment = self.fragments.get(name)
        if fragment is None or name in seen:  # unknown or cyclic: other validation rules report it
            return Measure(0, 0)
        on = self.schema.get_type(fragment.type_condition.name.value) or parent
        return self.selections(on, fragment.selection_set, sizes, seen | {name})

    def field(self, parent: GraphQLNamedType, node: FieldNode, sizes: Mapping[str, int]) -> Measure:
        name = node.name.value
        if name.startswith("__"):
            depth = 0 if node.selection_set is None else 1 + _depth(node.selection_set, self.fragments)
            return Measure(0, depth)
        if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) or name not in parent.fields:
            return Measure(0, 0)  # an unknown field: FieldsOnCorrectTypeRule reports it
        returned = get_named_type(parent.fields[name].type)
        cost = self.model.field_costs.get((parent.name, name), 1 if is_composite_type(returned) else 0)
        inner = Measure(0, 0)
        if node.selection_set is not None:
            inner = self.selections(returned, node.selection_set, self._sizes(parent.name, node), frozenset())
        sliced = self.model.sliced(parent.name, name)
        own = _size(sliced, node) if sliced is not None and not sliced.sized_fields else 1
        times = sizes.get(name, 1) * self.model.bound(parent.name, name) * own
        return Measure(cost + inner.cost * times, inner.introspection_depth)

    def _sizes(self, parent: str, node: FieldNode) -> dict[str, int]:
        sliced = self.model.sliced(parent, node.name.value)
        if sliced is None:
            return {}
        return dict.fromkeys(sliced.sized_fields, _size(sliced, node))


def _size(sliced: SlicedList, node: FieldNode) -> int:
    """The list size the field's argument asks for (a variable counts at the cap)."""
    size = sliced.default
    for argument in node.arguments or ():
        if argument.name.value not in (sliced.argument, sliced.alternative):
            continue
        value = argument.value
        if isinstance(value, IntValueNode):
            size = max(0, int(value.value))
        elif isinstance(value, ListValueNode):  # a list argument sizes by its length
            size = len(value.values)
        else:
            size = sliced.cap
    return size


def _depth(selection_set: SelectionSetNode, fragments: Mapping[str, FragmentDefinitionNode]) -> int:
    """Nesting below a selection set, through fragments (each fragment followed once per path)."""

    def walk(node: SelectionSetNode, seen: frozenset[str]) -> int:
        deepest = 0
        for selection in node.selections:
            if isinstance(selection, FieldNode) and selection.selection_set is not None:
                deepest = max(deepest, 1 + walk(selection.selection_set, seen))
            elif isinstance(selection, InlineFragmentNode):
                deepest = max(deepest, walk(selection.selection_set, seen))
            elif isinstance(selection, FragmentSpreadNode):
                fragment = fragments.get(selection.name.value)
                if fragment is not None and fragment.name.value not in seen:
                    deepest = max(deepest, walk(fragment.selection_set, seen | {fragment.name.value}))
        return deepest

    return walk(selection_set, frozenset())
