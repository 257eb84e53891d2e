"""The processes a region's supervisor runs: with several regions, a replicator from each other one."""

from __future__ import annotations

from regions.runtime.settings import RegionEndpoint, Settings
from regions.runtime.supervisor import region_programs


def test_one_region_runs_no_replicator() -> None:
    names = [p.name for p in region_programs(Settings(region="local", regions={}))]
    assert names == ["processor", "projector", "audit", "lifecycle", "intake", "gateway"]


def test_each_other_region_gets_a_replicator_on_the_port_ops_services_names() -> None:
    regions = {r: RegionEndpoint(kafka_bootstrap_servers=f"{r}:9092") for r in ("eu", "us", "ap")}
    settings = Settings(region="us", regions=regions)
    settings = settings.model_copy(
        update={"replicator": settings.replicator.model_copy(update={"health_port": 8185})}
    )
    replicators = [p for p in region_programs(settings) if p.name.startswith("replicator")]
    assert [(p.name, p.port, dict(p.env)) for p in replicators] == [
        (
            "replicator-from-ap",
            8187,
            {"LB_REPLICATOR__SOURCE_REGION": "ap", "LB_REPLICATOR__HEALTH_PORT": "8187"},
        ),
        (
            "replicator-from-eu",
            8185,
            {"LB_REPLICATOR__SOURCE_REGION": "eu", "LB_REPLICATOR__HEALTH_PORT": "8185"},
        ),
    ]
