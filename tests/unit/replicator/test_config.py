"""A replicator is told which region to copy from; settings that name none, or this region, are refused."""

from __future__ import annotations

import re

import pytest

from regions.runtime.settings import RegionEndpoint, ReplicatorSettings, Settings
from replicator.config import Pair, SettingsError, replication_pair

REGIONS = {
    "eu": RegionEndpoint(kafka_bootstrap_servers="eu-kafka:9092"),
    "us": RegionEndpoint(kafka_bootstrap_servers="us-kafka:9092"),
}


def _settings(region: str, source: str, regions: dict[str, RegionEndpoint] = REGIONS) -> Settings:
    return Settings.model_construct(
        region=region, regions=regions, replicator=ReplicatorSettings(source_region=source)
    )


def test_the_pair_names_the_source_and_its_brokers() -> None:
    assert replication_pair(_settings("eu", "us")) == Pair("us", "eu", "us-kafka:9092")


@pytest.mark.parametrize(
    ("region", "source", "regions", "named"),
    [
        ("eu", "us", {}, "LB_REGIONS is empty"),
        (
            "eu",
            "",
            REGIONS,
            "LB_REPLICATOR__SOURCE_REGION is ''; it must name one of the regions in LB_REGIONS: eu, us",
        ),
        ("eu", "ap", REGIONS, "'ap'"),
        ("eu", "eu", REGIONS, "this region (LB_REGION) itself"),
    ],
)
def test_settings_without_a_valid_source_are_refused_with_what_to_set(
    region: str, source: str, regions: dict[str, RegionEndpoint], named: str
) -> None:
    with pytest.raises(SettingsError, match=re.escape(named)):
        replication_pair(_settings(region, source, regions))


def test_other_regions_are_the_remote_ones_in_name_order() -> None:
    regions = {**REGIONS, "ap": RegionEndpoint(kafka_bootstrap_servers="ap-kafka:9092")}
    assert _settings("us", "eu", regions).remote_regions() == ["ap", "eu"]
