"""The gateway's admission rule, pure: which GraphQL operations over HTTP start, and whether live
push goes on, given the operations in flight in this process.

Under load the gateway sheds in this order: live push first (once ``push_shed_at`` operations are
in flight), then queries (refused OVERLOADED once they would use the mutations' reserved share),
and durable writes (admin mutations) last, when the whole bound is in use.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphql import GraphQLError, OperationDefinitionNode, OperationType, parse

from regions.core.admission import Bound


@dataclass(frozen=True, slots=True)
class OperationBounds:
    operations: Bound  # limit: operations at once; reserved: the share only mutations use
    push_shed_at: int  # operations in flight from which live push waits

    def admits(self, in_flight: int, mutation: bool) -> bool:
        return self.operations.admits(in_flight, 1, priority=mutation)

    def pushes(self, in_flight: int) -> bool:
        """Whether live push may go on (board reads after hints, updates sent to subscribers)."""
        return in_flight < self.push_shed_at


def is_mutation(document: str | None, operation_name: str | None) -> bool:
    """Whether the operation the request runs is a mutation; False for a document that does not
    parse or names no such operation (the executor answers those with their own errors)."""
    if not document:
        return False
    try:
        parsed = parse(document, no_location=True)
    except GraphQLError:
        return False
    operations = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [o for o in operations if operation_name is None or (o.name and o.name.value == operation_name)]
    return len(chosen) == 1 and chosen[0].operation is OperationType.MUTATION
