"""Health, readiness, lag and Prometheus metrics endpoints shared by every region process."""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import msgspec
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Gauge, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

CONSUMER_LAG = Gauge("lb_consumer_lag", "Records not yet processed", ["service", "topic", "partition"])


@dataclass(slots=True, weakref_slot=True)
class Health:
    """What a process reports: readiness checks by name and its consumer lag per partition.

    ``checks`` are what the process cannot serve without: one failing makes it unready.
    ``advisory`` checks name what it works around (e.g. the intake serves cached boards while
    Cassandra is away): they are reported as missing but leave the process ready. ``details`` add
    entries to the body that say more than yes or no (e.g. the gateway's store states).
    """

    service: str
    checks: dict[str, Callable[[], bool]] = field(default_factory=dict)
    lag: dict[str, dict[int, int]] = field(default_factory=dict)
    advisory: dict[str, Callable[[], bool]] = field(default_factory=dict)
    details: dict[str, Callable[[], object]] = field(default_factory=dict)

    def report_lag(self, topic: str, lag: dict[int, int]) -> None:
        """Lag of the partitions this process now reads; partitions it no longer reads are dropped."""
        for gone in self.lag.get(topic, {}).keys() - lag.keys():
            CONSUMER_LAG.remove(self.service, topic, str(gone))
        self.lag[topic] = lag
        for partition, value in lag.items():
            CONSUMER_LAG.labels(self.service, topic, str(partition)).set(value)

    def __post_init__(self) -> None:
        _REPORTED[id(self)] = self

    def results(self) -> dict[str, bool]:
        """Every check, required and advisory, by name."""
        checks = self.checks | self.advisory
        return {name: bool(check()) for name, check in checks.items()}

    def status(self) -> tuple[bool, dict[str, object]]:
        results = self.results()
        ready = all(results[name] for name in self.checks)
        missing = sorted(name for name, ok in results.items() if not ok)
        body = {
            "service": self.service,
            "ready": ready,
            "checks": results,
            "missing": missing,
            "lag": self.lag,
        }
        return ready, body | {name: detail() for name, detail in self.details.items()}


#: Every live Health of this process, by identity (the dataclass compares by value, so is unhashable).
_REPORTED: weakref.WeakValueDictionary[int, Health] = weakref.WeakValueDictionary()


class _ReadinessChecks(Collector):
    """``lb_readiness_check{service, check}``: 1 while a check of ``/readyz`` holds, read at each
    scrape, so an alert sees what a readiness probe sees (advisory checks too, such as the intake's
    ``cassandra`` while it serves cached boards)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "lb_readiness_check", "1 while the named check of /readyz holds", labels=["service", "check"]
        )
        for health in list(_REPORTED.values()):
            for name, ok in health.results().items():
                family.add_metric([health.service, name], 1.0 if ok else 0.0)
        yield family


REGISTRY.register(_ReadinessChecks())


def _json(body: object, status: int = 200) -> Response:
    return Response(msgspec.json.encode(body), status, media_type="application/json")


def health_routes(health: Health) -> list[Route]:
    async def healthz(_: Request) -> Response:
        return _json({"service": health.service, "pid": os.getpid(), "alive": True, "lag": health.lag})

    async def readyz(_: Request) -> Response:
        ready, body = health.status()
        return _json(body, 200 if ready else 503)

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return [Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics)]


async def serve_health(health: Health, host: str, port: int) -> asyncio.Task[None]:
    """Serve the health routes of a worker process in the background. The app needs no lifespan,
    and without one a clean stop (which cancels this task) logs no CancelledError traceback."""
    app = Starlette(routes=health_routes(health))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    return asyncio.create_task(server.serve())
