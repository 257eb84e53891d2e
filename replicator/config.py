"""What a replicator process is told to copy, read from the settings, and how it stops."""

from __future__ import annotations

from dataclasses import dataclass

from regions.runtime.settings import Settings


class ReplicationStopped(RuntimeError):
    """A condition only an operator can resolve; the process exits with this message."""


class SettingsError(ReplicationStopped):
    """The settings do not name a valid source region."""


@dataclass(frozen=True, slots=True)
class Pair:
    """What one replicator copies: region ``source``'s accepted awards into region ``local``."""

    source: str
    local: str
    source_bootstrap_servers: str


def replication_pair(settings: Settings) -> Pair:
    """The pair named by the settings, or ``SettingsError`` saying what to set."""
    source, regions = settings.replicator.source_region, sorted(settings.regions)
    if not regions:
        raise SettingsError("LB_REGIONS is empty: name every region with its Kafka brokers (see README)")
    if source not in settings.regions:
        raise SettingsError(
            f"LB_REPLICATOR__SOURCE_REGION is {source!r}; it must name one of the regions in LB_REGIONS: "
            f"{', '.join(regions)}"
        )
    if source == settings.region:
        raise SettingsError(
            f"LB_REPLICATOR__SOURCE_REGION is {source!r}, this region (LB_REGION) itself; "
            "name the remote region whose awards to copy"
        )
    return Pair(source, settings.region, settings.regions[source].kafka_bootstrap_servers)
