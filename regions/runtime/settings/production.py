"""The production policy: what ``LB_MODE=production`` refuses, and what it lets through with a warning.

It refuses the development secrets, single-copy storage, the switches for tests (``TEST_ONLY``) and
stores reached without protection, unless a store's opt-out says it is inside a private network;
each refusal names the setting and what it would risk.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, SecretStr

from regions.core.redaction import mask_url
from regions.runtime.settings.faults import TEST_ONLY
from regions.runtime.settings.gateway import DEV_ADMIN_TOKEN, GatewaySettings
from regions.runtime.settings.intake import DEV_AWARD_SECRET, IntakeSettings
from regions.runtime.settings.stores import PLAINTEXT_KAFKA, CassandraSettings, KafkaSettings, RedisSettings


class UnsafeSettingsError(ValueError):
    """Production mode was asked to run with a development default."""


def without_development_secrets(intake: IntakeSettings, gateway: GatewaySettings) -> None:
    """Production: a secret that was not given is none, never the development one."""
    if "award_keys" not in intake.model_fields_set:
        intake.award_keys = {}
    if "admin_token" not in gateway.model_fields_set:
        gateway.admin_token = SecretStr("")


def missing_secrets(service: str, intake: IntakeSettings, gateway: GatewaySettings) -> list[str]:
    """The secret settings ``service`` works with that were not given (production has no defaults)."""
    needed = {"intake": ("LB_INTAKE__AWARD_KEYS", bool(intake.award_keys)),
              "gateway": ("LB_GATEWAY__ADMIN_TOKEN", bool(gateway.admin_tokens()))}  # fmt: skip
    name, given = needed.get(service, ("", True))
    return [] if given else [name]


def private_network_warnings(
    kafka: KafkaSettings, redis: RedisSettings, cassandra: CassandraSettings
) -> list[str]:
    """What production mode lets through because an opt-out says the store is in a private network."""
    k, r, c = kafka, redis, cassandra
    return [text for on, text in (
        (k.allow_plaintext_in_private_network, f"LB_KAFKA__ALLOW_PLAINTEXT_IN_PRIVATE_NETWORK is set: Kafka "
         f"is reached with {k.security_protocol}, awards cross the network unencrypted"),
        (r.allow_no_password_in_private_network, "LB_REDIS__ALLOW_NO_PASSWORD_IN_PRIVATE_NETWORK is set: "
         "anyone who reaches Redis can rewrite the projection"),
        (c.allow_no_auth_in_private_network, "LB_CASSANDRA__ALLOW_NO_AUTH_IN_PRIVATE_NETWORK is set: anyone "
         "who reaches Cassandra can rewrite the catalog, audit and archives"),
    ) if on]  # fmt: skip


def switches_for_tests(sections: BaseModel) -> list[str]:
    """Problems: every test-only switch (``TEST_ONLY``) of ``sections`` that is not at its default."""
    problems = []
    for (section, name), breaks in TEST_ONLY.items():
        model = getattr(sections, section)
        value, default = getattr(model, name), type(model).model_fields[name].default
        if value != default:
            shown = str(value).lower() if isinstance(value, bool) else value
            problems.append(
                f"LB_{section.upper()}__{name.upper()} is {shown}: {breaks} (a switch for tests only)"
            )
    return problems


def unprotected_stores(kafka: KafkaSettings, redis: RedisSettings, cassandra: CassandraSettings) -> list[str]:
    """Problems: a store reached without encryption or authentication, unless its opt-out says it is
    inside a private network."""
    problems = []
    k, r, c = kafka, redis, cassandra
    if k.security_protocol in PLAINTEXT_KAFKA and not k.allow_plaintext_in_private_network:
        problems.append(
            f"LB_KAFKA__SECURITY_PROTOCOL is {k.security_protocol}: awards and credentials would cross "
            "the network unencrypted (use SSL or SASL_SSL; for brokers inside a private network, set "
            "LB_KAFKA__ALLOW_PLAINTEXT_IN_PRIVATE_NETWORK=true)"
        )
    # An unset URL is a process that does not use Redis (the chart gives it to those that do).
    if (
        "url" in r.model_fields_set
        and not urlsplit(r.url).password
        and not r.allow_no_password_in_private_network
    ):
        problems.append(
            f"LB_REDIS__URL {mask_url(r.url)} has no password: anyone who reaches it could rewrite the "
            "projection (redis://:PASSWORD@host...; for a Redis inside a private network, set "
            "LB_REDIS__ALLOW_NO_PASSWORD_IN_PRIVATE_NETWORK=true)"
        )
    if not c.username and not c.allow_no_auth_in_private_network:
        problems.append(
            "LB_CASSANDRA__USERNAME is empty: Cassandra would be used without authentication (set "
            "LB_CASSANDRA__USERNAME and LB_CASSANDRA__PASSWORD; for a Cassandra inside a private "
            "network, set LB_CASSANDRA__ALLOW_NO_AUTH_IN_PRIVATE_NETWORK=true)"
        )
    return problems


def development_secrets(intake: IntakeSettings, gateway: GatewaySettings) -> list[str]:
    """Problems: a development secret given again (a missing one is dropped, see above)."""
    problems = []
    if any(s.get_secret_value() == DEV_AWARD_SECRET for s in intake.award_keys.values()):
        problems.append("LB_INTAKE__AWARD_KEYS still holds the development secret")
    if DEV_ADMIN_TOKEN in gateway.admin_tokens():
        problems.append("LB_GATEWAY__ADMIN_TOKEN is the development token")
    return problems


def single_copies(kafka: KafkaSettings, cassandra: CassandraSettings) -> list[str]:
    """Problems: storage that would not survive the loss of one broker or one Cassandra node."""
    problems = []
    k, c = kafka, cassandra
    if k.replication_factor < 3:
        problems.append(
            f"LB_KAFKA__REPLICATION_FACTOR is {k.replication_factor}: an acknowledged award must survive "
            "the loss of a broker (use 3)"
        )
    if not 2 <= k.min_insync_replicas < k.replication_factor:
        problems.append(
            f"LB_KAFKA__MIN_INSYNC_REPLICAS is {k.min_insync_replicas}: it must be at least 2, so an "
            "acknowledgement means two copies, and below the replication factor, so one broker may be down"
        )
    for dc, replicas in c.datacenters.items() or [(c.local_dc, c.replication_factor)]:
        if replicas < 3:
            setting = "LB_CASSANDRA__DATACENTERS" if c.datacenters else "LB_CASSANDRA__REPLICATION_FACTOR"
            problems.append(
                f"{setting} gives data center {dc} {replicas} replicas: the catalog, audit and archives "
                "need 3 in every data center"
            )
    return problems


def refuse(problems: list[str]) -> None:
    """Raise :class:`UnsafeSettingsError` naming every problem, if there is any."""
    if problems:
        raise UnsafeSettingsError(
            "production mode refuses unsafe settings: "
            + "; ".join(problems)
            + ". Set them in the environment (see README, Settings)."
        )
