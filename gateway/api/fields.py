"""Typed forms of strawberry's field decorators that take a description.

``strawberry.field(description=...)`` is typed as returning ``Any``, which would make every
resolver it decorates untyped; these keep the resolver's own signature for the type checker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import strawberry

F = TypeVar("F", bound=Callable[..., Any])


def field(description: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], strawberry.field(description=description))


def mutation(description: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], strawberry.mutation(description=description))


def subscription(description: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], strawberry.subscription(description=description))
