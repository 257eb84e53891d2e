"""The eu and us regions a module's end-to-end tests share (``tests.multi_region``), a gateway each."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from cassandra.cluster import Session

from regions.runtime.settings import Settings
from tests.clusters import RegionServerPool, replicator_processes
from tests.conftest import isolated
from tests.multi_region import Deployment, deployments


@contextlib.asynccontextmanager
async def two_regions(
    base_settings: Settings, session_tag: str, region_servers: RegionServerPool, cassandra_session: Session,
    logs: Path, *, services: Sequence[str], env: dict[str, str] | None = None,
) -> AsyncIterator[Deployment]:  # fmt: skip
    """eu and us running ``services``, replicating each other, a gateway each; stopped at the end."""
    settings = isolated(base_settings, session_tag, logs)
    async with (
        replicator_processes(logs) as replicators,
        deployments(settings, region_servers, replicators, cassandra_session, logs) as deploy,
    ):
        yield await deploy(["eu", "us"], services=services, gateways_in=["eu", "us"], env=env)


def module_regions(name: str, *, services: Sequence[str], env: dict[str, str] | None = None) -> Callable[..., Any]:
    """A module-scoped fixture of ``two_regions``, its logs under a folder named ``name``."""

    @pytest.fixture(scope="module")
    async def regions(
        base_settings: Settings, session_tag: str, region_servers: RegionServerPool, cassandra_session: Session,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> AsyncIterator[Deployment]:  # fmt: skip
        logs = tmp_path_factory.mktemp(name)
        async with two_regions(base_settings, session_tag, region_servers, cassandra_session, logs,
                               services=services, env=env) as deployment:  # fmt: skip
            yield deployment

    return regions
