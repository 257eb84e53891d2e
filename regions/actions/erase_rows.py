"""Erasing a player's rows from Cassandra (a deleted account): their award history, their profile,
their entries in archived results and in boards' moderation logs, one ``ErasureStep`` per store.

Each store is erased on its own: one that fails is FAILED with the error and the others go on.
Running it again after a failure finishes the work; after a success it touches nothing and answers
DONE again. The stream side (Kafka, the processors' state, Redis) is erased elsewhere.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime

from cassandra.cluster import Session

from regions.actions.erase_archives import ArchiveStores, erase_from_archives
from regions.core.erasure import ErasureStatus, ErasureStep
from regions.stores.cassandra.audit import CassandraAudit
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.profiles import CassandraProfiles
from regions.stores.cassandra.results import CassandraResults


@dataclass(frozen=True, slots=True)
class PlayerStores:
    """The Cassandra stores holding a player's rows."""

    audit: CassandraAudit
    profiles: CassandraProfiles
    archives: ArchiveStores
    moderation: CassandraModeration

    @classmethod
    def on(cls, session: Session) -> PlayerStores:
        """Prepare every statement; blocks, so call it in a worker thread from a running loop."""
        archives = ArchiveStores(CassandraResults(session), CassandraCorrections(session),
                                 CassandraLifecycle(session), CassandraPeriods(session))  # fmt: skip
        return cls(CassandraAudit(session), CassandraProfiles(session), archives, CassandraModeration(session))


async def _step(store: str, work: Awaitable[str]) -> ErasureStep:
    try:
        return ErasureStep(store, ErasureStatus.DONE, await work)
    except Exception as exc:  # reported as the store's outcome; the caller runs the erasure again
        detail = f"{type(exc).__name__}: {exc}; erase the player again"
        return ErasureStep(store, ErasureStatus.FAILED, detail)


async def _erase_history(audit: CassandraAudit, user_id: str) -> str:
    event_ids = [row.event_id for row in await audit.rows_of(user_id)]
    await audit.delete(event_ids)
    return f"{len(event_ids)} rows deleted"


async def _erase_profile(profiles: CassandraProfiles, user_id: str) -> str:
    found = bool(await profiles.get_many([user_id]))
    await profiles.delete(user_id)
    return "1 row deleted" if found else "0 rows deleted"


async def _erase_moderation(moderation: CassandraModeration, user_id: str) -> str:
    return f"{await moderation.erase_user(user_id)} actions deleted"


async def erase_player_rows(stores: PlayerStores, user_id: str, *, now: datetime) -> list[ErasureStep]:
    """Erase the player from award_history, profiles, the archives and the moderation logs (in that order)."""
    return [
        await _step("award_history", _erase_history(stores.audit, user_id)),
        await _step("profiles", _erase_profile(stores.profiles, user_id)),
        await _step("archives", erase_from_archives(stores.archives, user_id, now=now)),
        await _step("moderation", _erase_moderation(stores.moderation, user_id)),
    ]
