"""The typed context of one GraphQL request (or of one WebSocket connection)."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    boards_read: dict[str, int] = field(default_factory=dict)  # board -> generation when first read
    cacheable: bool = True  # False once the operation did anything but read boards
    unavailable: dict[str, int] = field(default_factory=dict)  # store -> fields answered null for it

    def read_board(self, board_id: str) -> None:
        self.boards_read.setdefault(board_id, self.services.projections.generation(board_id))

    def store_unavailable(self, store: str) -> None:
        """A field is null because ``store`` could not answer: the response says so (and is not cached)."""
        self.unavailable[store] = self.unavailable.get(store, 0) + 1
        self.cacheable = False
