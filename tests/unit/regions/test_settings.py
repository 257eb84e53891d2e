"""Production mode refuses development secrets and single-copy storage, naming each setting; an
LB_* variable that names no setting is refused."""

from __future__ import annotations

import logging
import os

import pytest
from pydantic import BaseModel, ValidationError

from regions.runtime.settings import (
    MAX_PARTITIONS,
    TEST_ONLY,
    LifecycleSettings,
    Settings,
    UnknownSettingsError,
    UnsafeSettingsError,
    check_environment,
    describe_refusal,
    load_settings,
)

SAFE = {
    "LB_MODE": "production",
    "LB_INTAKE__AWARD_KEYS": '{"studio-a": "a-real-secret"}',
    "LB_GATEWAY__ADMIN_TOKEN": "a-real-admin-token",
    "LB_KAFKA__REPLICATION_FACTOR": "3",
    "LB_KAFKA__MIN_INSYNC_REPLICAS": "2",
    "LB_KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
    "LB_KAFKA__SASL_USERNAME": "lb",
    "LB_KAFKA__SASL_PASSWORD": "a-kafka-password",
    "LB_REDIS__URL": "rediss://:a-redis-password@redis:6380/0",
    "LB_CASSANDRA__REPLICATION_FACTOR": "3",
    "LB_CASSANDRA__USERNAME": "lb",
    "LB_CASSANDRA__PASSWORD": "a-cassandra-password",
}
#: Each store's opt-out for a private network, with what it lets production mode accept.
PRIVATE_NETWORK = {
    "LB_KAFKA__ALLOW_PLAINTEXT_IN_PRIVATE_NETWORK": {"LB_KAFKA__SECURITY_PROTOCOL": "PLAINTEXT"},
    "LB_REDIS__ALLOW_NO_PASSWORD_IN_PRIVATE_NETWORK": {"LB_REDIS__URL": "redis://redis:6379/0"},
    "LB_CASSANDRA__ALLOW_NO_AUTH_IN_PRIVATE_NETWORK": {"LB_CASSANDRA__USERNAME": ""},
}


def settings_from_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Settings:
    """Settings from exactly ``env``: whatever LB_* the shell exported is set aside."""
    for name in [n for n in os.environ if n.startswith("LB_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def _checked(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Settings:
    """Settings as a process loads them: the environment is checked first."""
    settings_from_env(monkeypatch, env)
    return load_settings()


def test_development_defaults_load_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from_env(monkeypatch, {})
    assert settings.kafka.replication_factor == 1 and settings.mode.value == "development"


def test_production_with_real_secrets_and_replicas_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from_env(monkeypatch, SAFE)
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
        ({"LB_PROCESSOR__HONOUR_CUTOFFS": "false"}, "LB_PROCESSOR__HONOUR_CUTOFFS is false"),
        ({"LB_PROCESSOR__FAULT_FORGET_EVENT_IDS": "true"}, "LB_PROCESSOR__FAULT_FORGET_EVENT_IDS is true"),
        ({"LB_LIFECYCLE__FAULT_CHUNK_PAUSE_MS": "30"}, "LB_LIFECYCLE__FAULT_CHUNK_PAUSE_MS is 30"),
        ({"LB_KAFKA__SECURITY_PROTOCOL": "PLAINTEXT"}, "LB_KAFKA__SECURITY_PROTOCOL is PLAINTEXT"),
        ({"LB_KAFKA__SECURITY_PROTOCOL": "SASL_PLAINTEXT"}, "LB_KAFKA__SECURITY_PROTOCOL is SASL_PLAINTEXT"),
        ({"LB_REDIS__URL": "redis://redis:6379/0"}, "LB_REDIS__URL redis://redis:6379/0 has no password"),
        (
            {"LB_REDIS__URL": "redis://lb@redis:6379/0"},
            "LB_REDIS__URL redis://lb@redis:6379/0 has no password",
        ),
        ({"LB_CASSANDRA__USERNAME": ""}, "LB_CASSANDRA__USERNAME is empty"),
    ],
)
def test_production_refuses_each_unsafe_setting_by_name(
    monkeypatch: pytest.MonkeyPatch, override: dict[str, str], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        settings_from_env(monkeypatch, {**SAFE, **override})


def test_production_defaults_are_all_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError) as refused:
        settings_from_env(monkeypatch, {"LB_MODE": "production"})
    message = str(refused.value)
    for named in ("LB_KAFKA__SECURITY_PROTOCOL", "LB_CASSANDRA__USERNAME", "LB_KAFKA__REPLICATION_FACTOR",
                  "LB_KAFKA__MIN_INSYNC_REPLICAS", "LB_CASSANDRA__REPLICATION_FACTOR"):  # fmt: skip
        assert named in message


@pytest.mark.parametrize(("section", "name"), sorted(TEST_ONLY))
def test_production_refuses_every_switch_for_tests_by_name(
    monkeypatch: pytest.MonkeyPatch, section: str, name: str
) -> None:
    default = type(getattr(Settings(), section)).model_fields[name].default
    other = {bool: lambda d: str(not d).lower(), float: lambda d: str(d + 1)}[type(default)](default)
    variable = f"LB_{section.upper()}__{name.upper()}"
    with pytest.raises(ValidationError, match=f"{variable} is .*a switch for tests only"):
        settings_from_env(monkeypatch, {**SAFE, variable: other})
    settings_from_env(monkeypatch, {**SAFE, "LB_MODE": "development", variable: other})  # development takes it


def _fields(model: type[BaseModel], prefix: str = "") -> dict[str, str]:
    """(section, field) path of every field of the settings, with its description."""
    found = {}
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            found |= _fields(kind, f"{name}.")
        else:
            found[f"{prefix}{name}"] = info.description or ""
    return found


def test_every_setting_for_tests_is_a_switch_production_refuses() -> None:
    """A new fault_* field, or one described as for tests, must join TEST_ONLY."""
    for_tests = {
        path
        for path, text in _fields(Settings).items()
        if path.split(".")[-1].startswith("fault_") or "for tests" in text.lower() or "only in tests" in text
    }
    assert for_tests == {f"{section}.{name}" for section, name in TEST_ONLY}


@pytest.mark.parametrize("opt_out", sorted(PRIVATE_NETWORK))
def test_a_store_in_a_private_network_is_accepted_by_its_opt_out_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, opt_out: str
) -> None:
    unprotected = {**SAFE, **PRIVATE_NETWORK[opt_out]}
    with pytest.raises(ValidationError, match=opt_out):  # the refusal names the way out
        settings_from_env(monkeypatch, unprotected)
    with caplog.at_level(logging.WARNING):
        _checked(monkeypatch, {**unprotected, opt_out: "true"})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and opt_out in warnings[0] and "UNSAFE IN PRODUCTION" in warnings[0]


def test_no_warning_without_an_opt_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        _checked(monkeypatch, SAFE)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_production_process_given_no_secret_has_none_never_the_development_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The chart gives the award keys to the intake alone and the admin token to the gateway alone."""
    given = {k: v for k, v in SAFE.items() if k not in ("LB_INTAKE__AWARD_KEYS", "LB_GATEWAY__ADMIN_TOKEN")}
    settings = _checked(monkeypatch, given)
    assert settings.intake.award_keys == {} and settings.gateway.admin_tokens() == []
    for service, variable in (("intake", "LB_INTAKE__AWARD_KEYS"), ("gateway", "LB_GATEWAY__ADMIN_TOKEN")):
        with pytest.raises(UnsafeSettingsError, match=f"the {service} needs {variable}"):
            load_settings(service)
    assert load_settings("processor").intake.award_keys == {}


def test_the_secrets_of_the_settings_are_every_secret_value(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from_env(monkeypatch, {**SAFE, "LB_GATEWAY__ADMIN_TOKEN": "new-token, old-token",
                                   "LB_REGIONS": '{"us": {"kafka_bootstrap_servers": "us:9092", '
                                   '"redis_url": "redis://:us%2Fpassword@us:6379"}}'})  # fmt: skip
    assert settings.secret_values() == {
        "a-real-secret", "new-token, old-token", "new-token", "old-token", "a-kafka-password",
        "a-redis-password", "a-cassandra-password", "us%2Fpassword", "us/password",
    }  # fmt: skip


def test_a_refusal_names_the_settings_and_never_shows_their_values(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError) as refused:
        settings_from_env(
            monkeypatch,
            {**SAFE, "LB_GATEWAY__ADMIN_TOKEN": "dev-admin-token", "LB_KAFKA__PARTITIONS": "many"},
        )
    described = describe_refusal(refused.value)
    assert "kafka.partitions: Input should be a valid integer" in described
    for secret in ("a-real-secret", "a-redis-password", "a-kafka-password", "a-cassandra-password", "many"):
        assert secret not in described


@pytest.mark.parametrize("count", ["0", str(MAX_PARTITIONS + 1), "99999999999999999999"])
def test_a_partition_count_out_of_bounds_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, count: str) -> None:
    with pytest.raises(ValidationError) as refused:
        settings_from_env(monkeypatch, {"LB_KAFKA__PARTITIONS": count})
    assert describe_refusal(refused.value).startswith("kafka.partitions: Input should be")
    highest = settings_from_env(monkeypatch, {"LB_KAFKA__PARTITIONS": str(MAX_PARTITIONS)})
    assert highest.kafka.partitions == MAX_PARTITIONS


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


def test_the_lifecycle_worker_polls_slower_while_nothing_is_in_progress() -> None:
    lifecycle = LifecycleSettings(poll_interval_s=2.0)
    assert (lifecycle.pass_interval_s(busy=True), lifecycle.pass_interval_s(busy=False)) == (2.0, 6.0)
    given = LifecycleSettings(poll_interval_s=0.5, idle_poll_interval_s=4.0)
    assert (given.pass_interval_s(busy=True), given.pass_interval_s(busy=False)) == (0.5, 4.0)
    assert LifecycleSettings(poll_interval_s=3.0, idle_poll_interval_s=1.0).pass_interval_s(busy=False) == 3.0
