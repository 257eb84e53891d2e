"""Player profiles in Cassandra's ``profiles`` table: written by operators (``ops/lb put-profile``),
read by the gateway next to ranks."""

from __future__ import annotations

from cassandra.cluster import Session

from regions.cassandra_store import execute
from regions.core.profiles import Profile


class CassandraProfiles:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._insert = session.prepare(
            "INSERT INTO profiles (user_id, display_name, country, avatar_url) VALUES (?, ?, ?, ?)"
        )

    async def put(self, profile: Profile) -> None:
        """Create or replace the player's profile."""
        values = (profile.user_id, profile.display_name, profile.country, profile.avatar_url)
        await execute(self._session, self._insert, values)
