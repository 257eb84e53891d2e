"""Compiled plans of known documents: the fast path of reads the generic executor answered before.

A query document that strawberry parsed, validated (cost rule included) and answered without an
error gets a plan: its selection with each field's definition, resolver and output type looked up
once. Running a plan calls the same resolvers with the same coerced arguments and serializes with the
same scalars as graphql-core, but skips its per-field machinery (paths, infos and strawberry's
argument conversion for plain attributes, the extension hooks around each operation).

A plan covers what the reads use: one query operation of fields with aliases, arguments, variables
and ``__typename``, over object types, lists and non-null types. A document with anything else
(fragments, directives, unions, a field selected twice under one name, introspection) gets no plan.

A plan only answers success: a resolver that raises, a null where the schema promises a value, a
value that does not serialize or a variable that does not coerce declines, and the request goes to
the generic executor, so every error answer (and its masking) is the generic one. Resolvers that
return awaitables are awaited together, one level at a time, so DataLoader batching is kept.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import OrderedDict
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

from graphql import (
    FieldNode,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    Undefined,
    get_operation_ast,
    is_leaf_type,
    parse,
)
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from graphql.pyutils import Path
from graphql.type.definition import GraphQLResolveInfoHelpers
from strawberry.types.field import StrawberryField

from gateway import metrics
from gateway.api.context import Context
from gateway.api.extensions import operation_labels, store_warnings
from gateway.core.cost import CostModel, measure

TYPENAME = "__typename"


class Declined(Exception):
    """The plan does not answer this request: the generic executor will."""


@dataclass(frozen=True, slots=True)
class FieldPlan:
    key: str  # the response key: the alias, else the field's name
    node: FieldNode
    definition: GraphQLField | None  # None for __typename
    attribute: str | None  # the Python attribute read when the field has no resolver
    type_: GraphQLOutputType
    selection: Selection | None  # for fields of an object type


@dataclass(frozen=True, slots=True)
class Selection:
    parent: GraphQLObjectType
    fields: tuple[FieldPlan, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    operation: OperationDefinitionNode
    root: Selection
    extensions: Mapping[str, Any]  # what the generic run reports besides warnings (the cost)
    cost: int
    labels: tuple[str, str]  # operation type and root fields, as OperationMetrics labels them


def compile_plan(
    schema: GraphQLSchema, query: str, operation_name: str | None, model: CostModel, budget: int
) -> Plan | None:
    """The plan of a document the generic executor answered; None when it needs the generic one."""
    document = parse(query)
    operation = get_operation_ast(document, operation_name)
    if operation is None or operation.operation is not OperationType.QUERY or operation.directives:
        return None
    if any(v.directives for v in operation.variable_definitions or ()):
        return None
    root = schema.query_type
    selection = None if root is None else _selection(root, operation.selection_set)
    if selection is None:
        return None
    cost = measure(schema, operation, {}, model).cost
    return Plan(
        operation, selection, {"cost": {"estimated": cost, "budget": budget}}, cost,
        operation_labels(document, operation_name),
    )  # fmt: skip


def _selection(parent: GraphQLObjectType, selection_set: SelectionSetNode) -> Selection | None:
    fields: list[FieldPlan] = []
    for node in selection_set.selections:
        if not isinstance(node, FieldNode) or node.directives:
            return None
        name = node.name.value
        key = node.alias.value if node.alias else name
        if any(f.key == key for f in fields) or (name.startswith("__") and name != TYPENAME):
            return None
        if name == TYPENAME:
            fields.append(FieldPlan(key, node, None, None, parent, None))
            continue
        planned = _field(parent, node, key)
        if planned is None:
            return None
        fields.append(planned)
    return Selection(parent, tuple(fields))


def _field(parent: GraphQLObjectType, node: FieldNode, key: str) -> FieldPlan | None:
    definition = parent.fields.get(node.name.value)
    if definition is None:
        return None
    named: Any = definition.type
    while isinstance(named, GraphQLNonNull | GraphQLList):
        named = named.of_type
    selection = None
    if isinstance(named, GraphQLObjectType):
        if node.selection_set is None:
            return None
        selection = _selection(named, node.selection_set)
        if selection is None:
            return None
    elif not is_leaf_type(named):
        return None  # an interface or a union: which type answers is decided per value
    strawberry_field = definition.extensions.get("strawberry-definition")
    attribute = None
    if isinstance(strawberry_field, StrawberryField):
        plain = strawberry_field.base_resolver is None and not strawberry_field.extensions
        attribute = strawberry_field.python_name if plain else None
    return FieldPlan(key, node, definition, attribute, definition.type, selection)


async def _gather(awaitables: Sequence[Awaitable[Any]]) -> list[Any]:
    return list(await asyncio.gather(*awaitables))


def _track(_: Sequence[Any]) -> None:
    raise Declined("a resolver asked to track background work")


def _is_awaitable(value: Any) -> TypeGuard[Awaitable[Any]]:
    return inspect.isawaitable(value)


HELPERS = GraphQLResolveInfoHelpers(_gather, _track)
Pending = tuple[dict[str, Any], FieldPlan, Awaitable[Any]]


@dataclass(slots=True)
class _Run:
    schema: GraphQLSchema
    plan: Plan
    variables: VariableValues
    context: Context
    pending: list[Pending]

    def object(self, selection: Selection, source: Any) -> dict[str, Any]:
        """The object's answer; fields whose resolver returned an awaitable are filled later."""
        out: dict[str, Any] = {}
        for field in selection.fields:
            if field.definition is None:
                out[field.key] = selection.parent.name
            elif field.attribute is not None:
                out[field.key] = self.complete(field, getattr(source, field.attribute))
            else:
                value = self.resolve(selection.parent, field, field.definition, source)
                if inspect.isawaitable(value):
                    out[field.key] = None
                    self.pending.append((out, field, value))
                else:
                    out[field.key] = self.complete(field, value)
        return out

    def resolve(
        self, parent: GraphQLObjectType, field: FieldPlan, definition: GraphQLField, source: Any
    ) -> Any:
        resolver = definition.resolve
        if resolver is None:
            raise Declined(f"{parent.name}.{field.node.name.value} has no resolver")
        arguments = get_argument_values(definition, field.node, self.variables)
        info = GraphQLResolveInfo(
            field.node.name.value, [field.node], field.type_, parent, Path(None, field.key, parent.name),
            self.schema, {}, None, self.plan.operation, self.variables, self.context, _is_awaitable,
            None, HELPERS,
        )  # fmt: skip
        return resolver(source, info, **arguments)

    def complete(self, field: FieldPlan, value: Any, type_: GraphQLOutputType | None = None) -> Any:
        """``value`` as graphql-core serializes it for the field's type, or Declined for an error."""
        type_ = field.type_ if type_ is None else type_
        if isinstance(type_, GraphQLNonNull):
            completed = self.complete(field, value, type_.of_type)
            if completed is None:
                raise Declined(f"null for the non-null {field.key}")
            return completed
        if value is None:
            return None
        if isinstance(type_, GraphQLList):
            if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
                raise Declined(f"{field.key} is not a list")
            return [self.complete(field, item, type_.of_type) for item in value]
        if isinstance(type_, GraphQLObjectType):
            if type_.is_type_of is not None and type_.is_type_of(value, cast(Any, None)) is not True:
                raise Declined(f"{field.key} is not a {type_.name}")
            if field.selection is None:
                raise Declined(f"{field.key} has no selection")
            return self.object(field.selection, value)
        serialized = type_.serialize(value)  # type: ignore[union-attr]  # a leaf, checked by compile_plan
        if serialized is None or serialized is Undefined:
            raise Declined(f"{field.key} does not serialize")
        return serialized

    async def settle(self) -> None:
        """Awaits what resolvers returned, one level at a time, all of a level together."""
        while self.pending:
            level, self.pending = self.pending, []
            if len(level) == 1:
                values: list[Any] = [await level[0][2]]
            else:
                values = await asyncio.gather(*(aw for _, _, aw in level), return_exceptions=True)
            for (out, field, _), value in zip(level, values, strict=True):
                if isinstance(value, BaseException):
                    raise Declined(f"{field.key} failed") from value
                out[field.key] = self.complete(field, value)


async def run_plan(
    schema: GraphQLSchema, plan: Plan, context: Context, variables: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The response body the generic executor would give, or Declined."""
    started = time.perf_counter()
    coerced = get_variable_values(schema, plan.operation.variable_definitions or (), dict(variables or {}))
    if not isinstance(coerced, VariableValues):
        raise Declined("the variables do not coerce")
    run = _Run(schema, plan, coerced, context, [])
    try:
        data = run.object(plan.root, None)
        await run.settle()
    except Declined:
        raise
    except Exception as exc:  # a resolver's or a scalar's error: the generic executor reports it
        raise Declined(repr(exc)) from exc
    finally:
        for _, _, awaitable in run.pending:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
    extensions = dict(plan.extensions)
    warnings = store_warnings(context)
    if warnings:
        extensions["warnings"] = warnings
    metrics.QUERY_COST.observe(plan.cost)
    outcome = "degraded" if context.unavailable else "ok"
    metrics.OPERATIONS.labels(*plan.labels, outcome).observe(time.perf_counter() - started)
    return {"data": data, "extensions": extensions}


class Plans:
    """Plans by (document, operation name), most recently used kept; a document that cannot have
    a plan is remembered as such, so it is not parsed again."""

    def __init__(self, schema: GraphQLSchema, model: CostModel, budget: int, max_entries: int = 1024) -> None:
        self._schema, self._model, self._budget = schema, model, budget
        self._max = max_entries
        self._plans: OrderedDict[tuple[str, str | None], Plan | None] = OrderedDict()

    def get(self, query: str, operation_name: str | None) -> Plan | None:
        key = (query, operation_name)
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
        return plan

    def learn(self, query: str, operation_name: str | None) -> None:
        """The generic executor answered this document without an error: give it a plan."""
        key = (query, operation_name)
        if key in self._plans:
            return
        self._plans[key] = compile_plan(self._schema, query, operation_name, self._model, self._budget)
        if len(self._plans) > self._max:
            self._plans.popitem(last=False)
