"""Readiness: required checks decide it; advisory checks and details only report."""

from __future__ import annotations

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
