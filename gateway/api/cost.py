"""The cost budget of an operation (see :mod:`gateway.core.cost` for what each field costs).

A validation rule refuses an operation over the budget before anything runs, with the code
``COST_LIMIT_EXCEEDED`` and the cost and budget in its extensions; it is built once per schema,
so the validation cache keeps working. An extension reports the cost of every operation that runs
in ``extensions.cost`` and in the ``lb_gateway_query_cost`` histogram.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    GraphQLError,
    OperationDefinitionNode,
    ValidationRule,
    get_operation_ast,
)
from strawberry.extensions import SchemaExtension

from gateway import metrics
from gateway.core.cost import CostModel, Measure, measure
from regions.runtime.settings import GatewaySettings


def cost_model(gateway: GatewaySettings) -> CostModel:
    return CostModel(
        gateway.max_listed_boards, gateway.max_top_k, gateway.max_context_range, gateway.max_listed_players
    )


def _fragments(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


def cost_rule(gateway: GatewaySettings) -> type[ValidationRule]:
    """The rule for these settings: refuses operations over the cost budget or the introspection depth."""
    model, budget, deepest = cost_model(gateway), gateway.max_query_cost, gateway.max_introspection_depth

    class CostRule(ValidationRule):
        def enter_document(self, node: DocumentNode, *_: Any) -> None:
            fragments = _fragments(node)
            for operation in node.definitions:
                if isinstance(operation, OperationDefinitionNode):
                    self._check(operation, measure(self.context.schema, operation, fragments, model))

        def _check(self, operation: OperationDefinitionNode, found: Measure) -> None:
            name = operation.name.value if operation.name else "anonymous"
            if found.cost > budget:
                self.report_error(GraphQLError(
                    f"'{name}' costs {found.cost}, over the budget of {budget} per request: ask for "
                    "fewer entries (k, range), fewer aliases or fewer profiles",
                    operation,
                    extensions={"code": "COST_LIMIT_EXCEEDED", "cost": found.cost, "budget": budget},
                ))  # fmt: skip
            if found.introspection_depth > deepest:
                self.report_error(GraphQLError(
                    f"'{name}' nests introspection {found.introspection_depth} deep; the limit is {deepest}",
                    operation,
                    extensions={"code": "COST_LIMIT_EXCEEDED"},
                ))  # fmt: skip

    return CostRule


class QueryCost(SchemaExtension):
    """``extensions.cost``: what the operation that ran was estimated to cost, and the budget."""

    def __init__(self, model: CostModel, budget: int) -> None:
        self.model, self.budget = model, budget
        self._cost: int | None = None

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        operation = None if document is None else get_operation_ast(document, context.operation_name)
        if document is not None and operation is not None:
            self._cost = measure(context.schema._schema, operation, _fragments(document), self.model).cost
            metrics.QUERY_COST.observe(self._cost)
        yield

    def get_results(self) -> dict[str, Any]:
        return {} if self._cost is None else {"cost": {"estimated": self._cost, "budget": self.budget}}


def query_cost(gateway: GatewaySettings) -> Callable[[], QueryCost]:
    """A factory of the extension for these settings (strawberry makes one per operation)."""
    model, budget = cost_model(gateway), gateway.max_query_cost
    return lambda: QueryCost(model, budget)
