"""Player profiles in Cassandra's ``profiles`` table: written by operators (``ops/lb put-profile``),
read by the gateway next to ranks, one ``IN`` query per batch of ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from cassandra.cluster import Session

from regions.core.profiles import Profile
from regions.stores.cassandra.base import CassandraTable, Statements


@dataclass(frozen=True, slots=True)
class ProfileRecord:
    """A profile as read back; a missing display name reads as the user id."""

    user_id: str
    display_name: str
    country: str | None = None
    avatar_url: str | None = None


class CassandraProfiles(CassandraTable):
    statements: ClassVar[Statements] = {
        "select": "SELECT user_id, display_name, country, avatar_url FROM profiles WHERE user_id IN ?",
        "insert": "INSERT INTO profiles (user_id, display_name, country, avatar_url) VALUES (?, ?, ?, ?)",
        "delete": "DELETE FROM profiles WHERE user_id = ?",
    }

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.round_trips = 0  # queries sent, for tests and benchmarks

    async def get_many(self, user_ids: Sequence[str]) -> dict[str, ProfileRecord]:
        """The stored profiles among ``user_ids`` (absent ids are missing from the result)."""
        self.round_trips += 1
        rows = await self._execute("select", (list(user_ids),))
        return {
            r.user_id: ProfileRecord(r.user_id, r.display_name or r.user_id, r.country, r.avatar_url)
            for r in rows
        }

    async def put(self, profile: Profile) -> None:
        """Create or replace the player's profile."""
        self.round_trips += 1
        values = (profile.user_id, profile.display_name, profile.country, profile.avatar_url)
        await self._execute("insert", values)

    async def delete(self, user_id: str) -> None:
        """Remove the player's profile (nothing happens when there is none)."""
        self.round_trips += 1
        await self._execute("delete", (user_id,))
