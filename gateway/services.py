"""What the GraphQL resolvers use, opened once per process and shared by every request."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.boards import BoardDirectory
from gateway.cassandra_stores import Stores
from gateway.core.limits import ReadLimits
from gateway.hub import HintHub
from gateway.profiles import GuardedProfiles
from gateway.projections import Projections
from regions.cassandra_store import CassandraConnection
from regions.settings import Settings


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    boards: BoardDirectory
    projections: Projections
    profiles: GuardedProfiles
    hub: HintHub
    cassandra: CassandraConnection[Stores]  # the stores' session, opened in the background
    limits: ReadLimits
