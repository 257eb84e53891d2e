"""Id arguments checked at the edge with the shared rules of :mod:`regions.core.ids` (the intake's):
a bad id is a ``BAD_USER_INPUT`` error naming the argument and the rule it breaks."""

from __future__ import annotations

from gateway.api.errors import InvalidInput
from regions.core.ids import board_id_error, user_id_error


def board_id(argument: str, value: str) -> str:
    problem = board_id_error(value)
    if problem is not None:
        raise InvalidInput(f"{argument}: {problem}")
    return value


def user_id(argument: str, value: str) -> str:
    problem = user_id_error(value)
    if problem is not None:
        raise InvalidInput(f"{argument}: {problem}")
    return value
