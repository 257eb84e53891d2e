"""The one settings object, ``Settings``: the deployment's mode and regions, and every section."""

from __future__ import annotations

from enum import StrEnum
from typing import Self
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from regions.runtime.settings import production
from regions.runtime.settings.audit import AuditSettings
from regions.runtime.settings.gateway import GatewaySettings
from regions.runtime.settings.intake import IntakeSettings
from regions.runtime.settings.lifecycle import LifecycleSettings
from regions.runtime.settings.processor import ProcessorSettings
from regions.runtime.settings.projector import ProjectorSettings
from regions.runtime.settings.replicator import RegionEndpoint, ReplicatorSettings
from regions.runtime.settings.stores import CassandraSettings, KafkaSettings, RedisSettings
from regions.runtime.settings.windows import WindowsSettings


class Mode(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LB_", env_nested_delimiter="__", extra="ignore")

    mode: Mode = Field(
        Mode.DEVELOPMENT, description="production refuses development secrets and single-copy storage."
    )
    region: str = Field("local", pattern=r"^[a-z][a-z0-9-]{0,31}$", description="This region's name.")
    regions: dict[str, RegionEndpoint] = Field(
        {},
        description="Every region of the deployment by name, this one included (JSON object); "
        "empty: this region alone.",
    )
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    cassandra: CassandraSettings = Field(default_factory=CassandraSettings)
    intake: IntakeSettings = Field(default_factory=IntakeSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    processor: ProcessorSettings = Field(default_factory=ProcessorSettings)
    projector: ProjectorSettings = Field(default_factory=ProjectorSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    replicator: ReplicatorSettings = Field(default_factory=ReplicatorSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    windows: WindowsSettings = Field(default_factory=WindowsSettings)

    @property
    def marker_delay_ms(self) -> int:
        """How long a region waits after CLOSING before it writes its cutoff markers."""
        delay = self.lifecycle.marker_delay_s
        if delay is None:  # the last award let in before the close, acknowledged here or at its home
            ack = max(self.kafka.delivery_timeout_s, self.intake.home_delivery_timeout_s)
            delay = self.intake.catalog_ttl_s + ack
        return int(delay * 1000)

    def region_names(self) -> list[str]:
        """Every region of the deployment by name (this one alone when ``regions`` is empty)."""
        return sorted({*self.regions, self.region})

    def remote_regions(self) -> list[str]:
        """The other regions of the deployment, by name: those whose awards are replicated here."""
        return sorted(name for name in self.regions if name != self.region)

    def region_kafka(self, name: str) -> KafkaSettings:
        """How this region's clients reach region ``name``'s brokers (``regions``' endpoint) with this
        region's own TLS/SASL settings: the replicator reading a source, an intake producing to a home."""
        return self.kafka.model_copy(update={"bootstrap_servers": self.regions[name].kafka_bootstrap_servers})

    def secret_values(self) -> set[str]:
        """Every secret these settings hold (secret fields, each admin token, the passwords in Redis
        URLs): what ``regions.core.redaction.redact`` keeps out of output and logs."""
        found = set(self.gateway.admin_tokens())
        for section in (getattr(self, name) for name in type(self).model_fields):
            values = section.values() if isinstance(section, dict) else [section]
            for model in (v for v in values if isinstance(v, BaseModel)):
                for value in (getattr(model, name) for name in type(model).model_fields):
                    inner = value.values() if isinstance(value, dict) else [value]
                    found |= {v.get_secret_value() for v in inner if isinstance(v, SecretStr)}
        for url in [self.redis.url, *(r.redis_url for r in self.regions.values() if r.redis_url)]:
            password = urlsplit(url).password
            if password:
                found |= {password, unquote(password)}
        found.discard("")
        return found

    def missing_secrets(self, service: str) -> list[str]:
        """The secret settings ``service`` works with that were not given (production has no defaults)."""
        return production.missing_secrets(service, self.intake, self.gateway)

    def private_network_warnings(self) -> list[str]:
        """What production mode lets through because an opt-out says the store is in a private network."""
        if self.mode is not Mode.PRODUCTION:
            return []
        return production.private_network_warnings(self.kafka, self.redis, self.cassandra)

    @model_validator(mode="after")
    def _refuse_unsafe_production(self) -> Self:
        if self.mode is not Mode.PRODUCTION:
            return self
        production.without_development_secrets(self.intake, self.gateway)
        production.refuse(
            [
                *production.switches_for_tests(self),
                *production.unprotected_stores(self.kafka, self.redis, self.cassandra),
                *production.development_secrets(self.intake, self.gateway),
                *production.single_copies(self.kafka, self.cassandra),
            ]
        )
        return self
