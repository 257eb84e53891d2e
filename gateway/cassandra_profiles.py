"""Player profiles from Cassandra's ``profiles`` table: one ``IN`` query per batch of ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cassandra.cluster import Session

from regions.cassandra_store import execute


@dataclass(frozen=True, slots=True)
class ProfileRecord:
    user_id: str
    display_name: str
    country: str | None = None
    avatar_url: str | None = None


class CassandraProfiles:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._select = session.prepare(
            "SELECT user_id, display_name, country, avatar_url FROM profiles WHERE user_id IN ?"
        )
        self._insert = session.prepare(
            "INSERT INTO profiles (user_id, display_name, country, avatar_url) VALUES (?, ?, ?, ?)"
        )
        self.round_trips = 0  # queries sent, for tests and benchmarks

    async def get_many(self, user_ids: Sequence[str]) -> dict[str, ProfileRecord]:
        """The stored profiles among ``user_ids`` (absent ids are missing from the result)."""
        self.round_trips += 1
        rows = await execute(self._session, self._select, (list(user_ids),))
        return {
            r.user_id: ProfileRecord(r.user_id, r.display_name or r.user_id, r.country, r.avatar_url)
            for r in rows
        }

    async def put(self, profile: ProfileRecord) -> None:
        self.round_trips += 1
        await execute(
            self._session,
            self._insert,
            (profile.user_id, profile.display_name, profile.country, profile.avatar_url),
        )
