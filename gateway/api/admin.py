"""The services an admin operation acts with."""

from __future__ import annotations

from strawberry.types import Info

from gateway.api.context import Context
from gateway.api.errors import NotAuthorized
from gateway.core.auth import is_admin
from gateway.services import Services


def admin_services(info: Info[Context, None]) -> Services:
    """The services an admin operation acts with; UNAUTHORIZED without the admin token. Its answer
    is never cached."""
    info.context.cacheable = False
    services = info.context.services
    tokens = services.settings.gateway.admin_tokens()
    if not is_admin(info.context.request.headers.get("authorization"), tokens):
        raise NotAuthorized("this operation needs Authorization: Bearer <admin token>")
    return services
