"""Schema extensions: caches, limits built once, error masking and operation metrics.

Validation rules are built once per schema: ``ValidationCache`` keys on the rule classes, so
limiter extensions that build a new rule class per request would miss the cache every time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from graphql import ASTValidationRule, DocumentNode, FieldNode, GraphQLError, get_operation_ast
from graphql.validation import NoSchemaIntrospectionCustomRule
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxTokensLimiter,
    ParserCache,
    SchemaExtension,
    ValidationCache,
)
from strawberry.extensions.max_aliases import create_validator as alias_rule
from strawberry.extensions.query_depth_limiter import create_validator as depth_rule

from gateway import metrics
from gateway.api.context import Context
from gateway.api.cost import cost_rule, query_cost
from gateway.api.errors import error_code, masked, should_mask
from regions.runtime.settings import GatewaySettings

CACHE_SIZE = 1024


class MaskInternalErrors(MaskErrors):
    """Errors raised by code are masked, except store failures, which keep a code (see errors.py)."""

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        return masked(error, self.error_message)


class StoreWarnings(SchemaExtension):
    """``extensions.warnings``: which stores could not answer, so null fields are never silent.

    A partial answer stays in ``data`` (ids and scores are complete) rather than in ``errors``, which
    many clients treat as a failed request."""

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context.context
        if isinstance(context, Context):  # one context per WebSocket: count per operation
            context.unavailable.clear()
        yield

    def get_results(self) -> dict[str, Any]:
        context = self.execution_context.context
        warnings = store_warnings(context) if isinstance(context, Context) else []
        return {"warnings": warnings} if warnings else {}


def store_warnings(context: Context) -> list[dict[str, Any]]:
    """One warning per store that could not answer some fields of the operation."""
    return [_warning(store, nulls) for store, nulls in sorted(context.unavailable.items())]


def _warning(store: str, nulls: int) -> dict[str, Any]:
    return {
        "code": "STORE_UNAVAILABLE",
        "store": store,
        "message": f"the {store} store is slow or down: {nulls} {store} fields are null; the rest is complete",
    }


class OperationMetrics(SchemaExtension):
    """Time and outcome of each operation (operation level only: no per-field hook). Labels: the
    operation type; its root fields (``leaderboard``, ``leaderboards+leaderboard``, ...: bounded by
    the schema, never the client's operation name); the outcome: ``ok``, ``degraded`` (a store
    warning) or the first error's code in lower case (``bad_user_input``, ``cost_limit_exceeded``,
    ``store_unavailable``, ``invalid`` for a syntax or validation error, ``internal`` for a bug).

    It is the last extension, so it sees the errors before they are masked."""

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        except Exception as exc:  # a syntax error passes through here (the parser cache parses early)
            code = error_code(exc) if isinstance(exc, GraphQLError) else "INTERNAL"
            self._observe(started, code.lower())
            raise
        context = self.execution_context
        errors = context.pre_execution_errors or getattr(context.result, "errors", None) or []
        if errors:
            outcome = error_code(errors[0]).lower()
        else:
            degraded = isinstance(context.context, Context) and bool(context.context.unavailable)
            outcome = "degraded" if degraded else "ok"
        self._observe(started, outcome)

    def _observe(self, started: float, outcome: str) -> None:
        context = self.execution_context
        kind, fields = operation_labels(context.graphql_document, context.operation_name)
        metrics.OPERATIONS.labels(kind, fields, outcome).observe(time.perf_counter() - started)


def operation_labels(document: DocumentNode | None, name: str | None) -> tuple[str, str]:
    """The operation's type and root fields, or ``invalid`` when there is no such operation."""
    operation = None if document is None else get_operation_ast(document, name)
    if operation is None:
        return "invalid", "invalid"
    roots = sorted({s.name.value for s in operation.selection_set.selections if isinstance(s, FieldNode)})
    return operation.operation.value, "+".join(roots) or "fragments"


def validation_rules(gateway: GatewaySettings, introspection: bool) -> list[type[ASTValidationRule]]:
    """Depth (of fields; introspection's own depth is in the cost rule), aliases, cost."""
    rules: list[type[ASTValidationRule]] = [
        depth_rule(gateway.max_query_depth, None, None),
        alias_rule(gateway.max_aliases),
        cost_rule(gateway),
    ]
    if not introspection:
        rules.append(NoSchemaIntrospectionCustomRule)
    return rules


def extensions(
    gateway: GatewaySettings, introspection: bool
) -> list[Callable[[], Any] | type[SchemaExtension]]:
    rules = validation_rules(gateway, introspection)
    return [
        lambda: ParserCache(maxsize=CACHE_SIZE),
        lambda: ValidationCache(maxsize=CACHE_SIZE),
        lambda: MaxTokensLimiter(max_token_count=gateway.max_query_tokens),
        lambda: AddValidationRules(rules),
        lambda: MaskInternalErrors(should_mask_error=should_mask),
        query_cost(gateway),
        StoreWarnings,
        OperationMetrics,
    ]
