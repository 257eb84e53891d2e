"""The environment the test harness hands the processes it starts says what their settings say."""

from __future__ import annotations

import pytest

from ops.stack import region_env
from tests.unit.regions.test_settings import settings_from_env


@pytest.mark.parametrize("idle_poll_interval_s", [None, 4.0])
@pytest.mark.parametrize("marker_delay_s", [None, 0.0])
def test_a_process_started_with_region_env_has_the_lifecycle_settings_it_was_given(
    monkeypatch: pytest.MonkeyPatch, idle_poll_interval_s: float | None, marker_delay_s: float | None
) -> None:
    base = settings_from_env(monkeypatch, {})
    given = base.model_copy(update={"lifecycle": base.lifecycle.model_copy(update={
        "poll_interval_s": 0.2, "idle_poll_interval_s": idle_poll_interval_s, "marker_delay_s": marker_delay_s})})  # fmt: skip
    started = settings_from_env(monkeypatch, region_env(given))
    assert started.lifecycle.poll_interval_s == 0.2
    assert started.lifecycle.idle_poll_interval_s == idle_poll_interval_s
    assert started.lifecycle.marker_delay_s == marker_delay_s
    assert started.lifecycle.pass_interval_s(busy=False) == given.lifecycle.pass_interval_s(busy=False)
