"""What the GraphQL resolvers use, opened once per process and shared by every request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.admission import Admission
from gateway.boards import BoardDirectory
from gateway.cassandra_stores import Stores
from gateway.core.limits import ReadLimits
from gateway.hub import HintHub
from gateway.profiles import GuardedProfiles
from gateway.projections import Projections
from regions.runtime.settings import Settings
from regions.stores.cassandra.session import CassandraConnection
from regions.stores.redis.projection import RedisProjection


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    boards: BoardDirectory
    projection: RedisProjection  # this region's (admin checks against its frozen boards)
    projections: Projections
    profiles: GuardedProfiles
    hub: HintHub  # this region's projection's hints
    hubs: Mapping[str, HintHub]  # by region: this one's and each home projection's the gateway reaches
    cassandra: CassandraConnection[Stores]  # the stores' session, opened in the background
    admission: Admission  # operations in flight over HTTP, and the gate of live push
    limits: ReadLimits
