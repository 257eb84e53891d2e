"""Readiness: required checks decide it; advisory checks and details only report."""

from __future__ import annotations

from prometheus_client import REGISTRY

from regions.runtime.health import Health


def test_only_required_checks_make_a_process_unready_and_details_join_the_body() -> None:
    up = {"kafka": True}
    health = Health(
        "svc",
        {"kafka": lambda: up["kafka"]},
        advisory={"cassandra": lambda: False},
        details={"stores": lambda: {"cassandra": "down"}},
    )

    ready, body = health.status()
    up["kafka"] = False
    unready, _ = health.status()

    assert (ready, unready) == (True, False)
    assert body == {
        "service": "svc",
        "ready": True,
        "checks": {"kafka": True, "cassandra": False},
        "missing": ["cassandra"],
        "lag": {},
        "stores": {"cassandra": "down"},
    }


def test_every_check_is_exported_as_a_readiness_gauge() -> None:
    up = {"kafka": True}
    health = Health("svc-gauge", {"kafka": lambda: up["kafka"]}, advisory={"cassandra": lambda: False})

    def sample(check: str) -> float | None:
        return REGISTRY.get_sample_value("lb_readiness_check", {"service": "svc-gauge", "check": check})

    first = (sample("kafka"), sample("cassandra"))
    up["kafka"] = False
    assert (first, sample("kafka")) == ((1.0, 0.0), 0.0)
    assert health.service == "svc-gauge"
