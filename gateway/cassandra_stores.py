"""The gateway's Cassandra stores (board catalog, profiles, archived results, board lifecycle,
corrections, moderation, erasures, a player's rows), built on one session that :class:`regions.stores.cassandra.session.CassandraConnection` opens in
the background: the gateway starts and serves Redis reads while Cassandra is down, its stores answer
``CassandraUnavailable`` until the first connection, and the driver reconnects after an outage.
"""

from __future__ import annotations

from dataclasses import dataclass

from cassandra.cluster import Session

from regions.actions.erase_rows import PlayerStores
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.erasures import CassandraErasures
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.profiles import CassandraProfiles
from regions.stores.cassandra.results import CassandraResults


@dataclass(frozen=True, slots=True)
class Stores:
    catalog: CassandraCatalog
    profiles: CassandraProfiles
    results: CassandraResults
    lifecycle: CassandraLifecycle
    corrections: CassandraCorrections
    periods: CassandraPeriods
    moderation: CassandraModeration
    erasures: CassandraErasures
    players: PlayerStores


def open_stores(session: Session) -> Stores:
    """Prepare every statement; blocks, so it runs in a worker thread."""
    return Stores(CassandraCatalog(session), CassandraProfiles(session), CassandraResults(session),
                  CassandraLifecycle(session), CassandraCorrections(session), CassandraPeriods(session),
                  CassandraModeration(session), CassandraErasures(session), PlayerStores.on(session))  # fmt: skip
