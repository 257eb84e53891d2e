"""Production mode refuses development secrets and single-copy storage, naming each setting; an
LB_* variable that names no setting is refused."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from regions.settings import Settings, UnknownSettingsError, check_environment, load_settings

SAFE = {
    "LB_MODE": "production",
    "LB_INTAKE__AWARD_KEYS": '{"studio-a": "a-real-secret"}',
    "LB_GATEWAY__ADMIN_TOKEN": "a-real-admin-token",
    "LB_KAFKA__REPLICATION_FACTOR": "3",
    "LB_KAFKA__MIN_INSYNC_REPLICAS": "2",
    "LB_CASSANDRA__REPLICATION_FACTOR": "3",
}


def _load(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Settings:
    """Settings from exactly ``env``: whatever LB_* the shell exported is set aside."""
    for name in [n for n in os.environ if n.startswith("LB_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def _checked(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Settings:
    """Settings as a process loads them: the environment is checked first."""
    _load(monkeypatch, env)
    return load_settings()


def test_development_defaults_load_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _load(monkeypatch, {})
    assert settings.kafka.replication_factor == 1 and settings.mode.value == "development"


def test_production_with_real_secrets_and_replicas_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _load(monkeypatch, SAFE)
    assert settings.kafka.min_insync_replicas == 2


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"LB_INTAKE__AWARD_KEYS": '{"dev": "dev-secret"}'}, "LB_INTAKE__AWARD_KEYS"),
        ({"LB_GATEWAY__ADMIN_TOKEN": "dev-admin-token"}, "LB_GATEWAY__ADMIN_TOKEN"),
        ({"LB_GATEWAY__ADMIN_TOKEN": "a-real-admin-token, dev-admin-token"}, "LB_GATEWAY__ADMIN_TOKEN"),
        ({"LB_GATEWAY__ADMIN_TOKEN": "a-real-admin-token,"}, "admin_token: empty token"),
        (
            {"LB_KAFKA__REPLICATION_FACTOR": "1", "LB_KAFKA__MIN_INSYNC_REPLICAS": "1"},
            "LB_KAFKA__REPLICATION_FACTOR",
        ),
        ({"LB_KAFKA__MIN_INSYNC_REPLICAS": "1"}, "LB_KAFKA__MIN_INSYNC_REPLICAS"),
        ({"LB_KAFKA__MIN_INSYNC_REPLICAS": "3"}, "LB_KAFKA__MIN_INSYNC_REPLICAS"),
        ({"LB_CASSANDRA__REPLICATION_FACTOR": "1"}, "LB_CASSANDRA__REPLICATION_FACTOR"),
        ({"LB_WINDOWS__CLOCK_OFFSET_S": "-3600"}, "LB_WINDOWS__CLOCK_OFFSET_S"),
    ],
)
def test_production_refuses_each_unsafe_setting_by_name(
    monkeypatch: pytest.MonkeyPatch, override: dict[str, str], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        _load(monkeypatch, {**SAFE, **override})


def test_production_defaults_are_all_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError) as refused:
        _load(monkeypatch, {"LB_MODE": "production"})
    message = str(refused.value)
    for named in ("LB_INTAKE__AWARD_KEYS", "LB_GATEWAY__ADMIN_TOKEN", "LB_KAFKA__REPLICATION_FACTOR",
                  "LB_KAFKA__MIN_INSYNC_REPLICAS", "LB_CASSANDRA__REPLICATION_FACTOR"):  # fmt: skip
        assert named in message


def test_a_misspelt_setting_is_refused_with_the_likely_one_and_the_known_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(UnknownSettingsError) as refused:
        _checked(monkeypatch, {"LB_KAFKA__PARTITONS": "3", "LB_REDIS_URL": "redis://x"})
    message = str(refused.value)
    assert "LB_KAFKA__PARTITONS (did you mean LB_KAFKA__PARTITIONS?)" in message
    assert "LB_REDIS_URL (did you mean LB_REDIS__URL?)" in message
    assert "LB_OPS_" in message
    assert "Known settings: " in message and "LB_AUDIT__HEALTH_PORT" in message


def test_ops_variables_sections_and_named_entries_are_not_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _checked(monkeypatch, {
        "LB_OPS_DATA_DIR": "/tmp/lb",
        "LB_KAFKA": '{"partitions": 3}',
        "lb_redis__key_prefix": "lower",
        "LB_INTAKE__AWARD_KEYS__studio": "a-secret",
        "LB_REGIONS__eu__KAFKA_BOOTSTRAP_SERVERS": "eu:9092",
    })  # fmt: skip
    assert settings.kafka.partitions == 3 and settings.redis.key_prefix == "lower"
    assert settings.regions["eu"].kafka_bootstrap_servers == "eu:9092"
    assert "studio" in settings.intake.award_keys


def test_unrelated_variables_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    check_environment({"LBX_SOMETHING": "1", "PATH": "/bin", "LB_MODE": "development"})
