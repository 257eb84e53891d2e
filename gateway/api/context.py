"""The typed context of one GraphQL request (or of one WebSocket connection)."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket

from gateway.profiles import ProfileLoader
from gateway.services import Services


@dataclass(slots=True)
class Context:
    services: Services
    request: Request | WebSocket
    response: Response | WebSocket
    profiles: ProfileLoader
