"""The user-facing errors of the API; every other error is masked as "Unexpected error.".

Each carries ``extensions.code``:

| code | when |
|---|---|
| LIMIT_EXCEEDED | ``k`` or ``range`` is over its cap (settings ``gateway.max_top_k`` / ``max_context_range``) |
| COST_LIMIT_EXCEEDED | the operation's cost is over ``gateway.max_query_cost`` (extensions: cost, budget), or its introspection nests deeper than ``gateway.max_introspection_depth``; refused before it runs |
| UNAUTHORIZED | an admin operation without ``Authorization: Bearer <admin token>`` |
| NOT_FOUND | a subscription, ``closeLeaderboard`` or ``publishCorrection`` names a board that does not exist |
| ALREADY_EXISTS | ``createLeaderboard`` with an id already taken; ``publishCorrection`` with a correction id used for another correction |
| BAD_USER_INPUT | an argument or input field breaks a rule, e.g. an id (the message names it and the rule); a close or correction outside the board's home region; a correction of a board that is not CLOSED, of an approximate board, or of a player not in its result |
| SUBSCRIPTION_LIMIT | this gateway follows too many players of one board |
| STORE_UNAVAILABLE | a store the operation needs (Cassandra: catalog, archives; the projection being rebuilt, for a correction's check) is down or not reached yet; retry |
| HOME_UNAVAILABLE | a HOME read of a board homed in another region could not reach that region's projection within ``gateway.home_timeout_s``; retry, or read with ``scope: REGIONAL`` |

GraphQL syntax and validation errors (including the depth, token, alias and cost limits) are shown as is.
"""

from __future__ import annotations

from graphql import GraphQLError

from gateway.projections import HomeUnreachable
from regions.stores.cassandra.session import CASSANDRA_ERRORS, CassandraUnavailable


class UserError(GraphQLError):
    code = "BAD_USER_INPUT"

    def __init__(self, message: str) -> None:
        super().__init__(message, extensions={"code": self.code})


class LimitExceeded(UserError):
    code = "LIMIT_EXCEEDED"


class NotAuthorized(UserError):
    code = "UNAUTHORIZED"


class NotFound(UserError):
    code = "NOT_FOUND"


class AlreadyExists(UserError):
    code = "ALREADY_EXISTS"


class InvalidInput(UserError):
    code = "BAD_USER_INPUT"


class SubscriptionLimit(UserError):
    code = "SUBSCRIPTION_LIMIT"


class HomeUnavailable(UserError):
    code = "HOME_UNAVAILABLE"


class StoreUnavailable(UserError):
    code = "STORE_UNAVAILABLE"


def should_mask(error: GraphQLError) -> bool:
    """Mask errors raised by code (bugs, backend failures); keep GraphQL and user-facing ones."""
    return error.original_error is not None and not isinstance(error.original_error, GraphQLError)


def _failure_code(cause: BaseException) -> str:
    """The code of an error raised by code: an unreachable home region, a store failure, or a bug."""
    if isinstance(cause, HomeUnreachable):
        return HomeUnavailable.code
    if isinstance(cause, CASSANDRA_ERRORS):
        return StoreUnavailable.code
    return "INTERNAL"


def error_code(error: GraphQLError) -> str:
    """The code of any error, for logs and metrics: a documented code, ``INVALID`` for GraphQL
    syntax and validation errors without one, ``INTERNAL`` for a failure of the code (a bug)."""
    cause = error.original_error
    if cause is not None and not isinstance(cause, GraphQLError):
        return _failure_code(cause)
    code = (error.extensions or {}).get("code")
    return code if isinstance(code, str) else "INVALID"


def masked(error: GraphQLError, generic: str) -> GraphQLError:
    """What the client sees of an error raised by code: a store failure keeps a clear message and
    the ``STORE_UNAVAILABLE`` code, an unreachable home region ``HOME_UNAVAILABLE``; anything else (a
    bug) becomes ``generic``."""
    cause = error.original_error
    code = "INTERNAL" if cause is None else _failure_code(cause)
    if code == "INTERNAL":
        return GraphQLError(generic, error.nodes, error.source, error.positions, error.path)
    if isinstance(cause, HomeUnreachable | CassandraUnavailable):
        message = str(cause)  # says what is missing and what to do
    else:
        message = "a store (Cassandra) is unavailable; retry later"
    return GraphQLError(message, error.nodes, error.source, error.positions, error.path,
                        extensions={"code": code})  # fmt: skip
