"""What every action on a board checks first: the board exists, and this is its home region."""

from __future__ import annotations

from regions.stores.cassandra.lifecycle import CassandraLifecycle, CloseRecord


class ActionRefused(Exception):
    """The action is not taken; ``kind`` says why (each action names its kinds), the message what to do."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


async def home_record(
    lifecycle: CassandraLifecycle, board_id: str, *, region: str, done: str, action: str, field: str = ""
) -> CloseRecord:
    """The board's record; refused (``unknown``, ``not_home``) unless the board is homed in ``region``.
    ``done`` says how the board is acted on there ("closed from"), ``action`` names the request,
    ``field`` the argument that names the board (with its separator)."""
    record = await lifecycle.record(board_id)
    if record is None:
        raise ActionRefused("unknown", f"{field}leaderboard {board_id!r} does not exist")
    home = record.board.home_region
    if home != region:
        # Not forwarded: a region knows the other regions' Kafka and Redis, not their gateways.
        raise ActionRefused(
            "not_home",
            f"{field}leaderboard {board_id!r} is {done} its home region {home!r}, not {region!r}: send the "
            f"{action} to that region",
        )
    return record
