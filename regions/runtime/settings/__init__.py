"""The one settings object of every service: environment variables with the ``LB_`` prefix.

Nested sections use a double underscore: ``LB_KAFKA__BOOTSTRAP_SERVERS``, ``LB_INTAKE__PORT``.
Each ``__main__`` loads it once with :func:`load_settings` and passes it down. Defaults work on a
developer machine; ``LB_MODE=production`` refuses the development secrets, single-copy storage, the
switches for tests (``TEST_ONLY``) and stores reached without protection (unless a store's opt-out
says it is inside a private network).
An ``LB_*`` variable that names no setting is refused, so a typo in a deployment is caught at start;
``LB_OPS_*`` variables belong to the ops scripts and are not settings.

The sections live one module each (the stores' three together, ``stores``), the object composing
them in ``root``, the production policy in ``production``, the switches for tests in ``faults`` and
the reading of the environment in ``environment``; every public name is importable from here.
"""

from __future__ import annotations

from regions.runtime.settings.audit import AuditSettings
from regions.runtime.settings.environment import (
    OPS_PREFIX,
    UnknownSettingsError,
    check_environment,
    describe_refusal,
    load_settings,
)
from regions.runtime.settings.faults import TEST_ONLY
from regions.runtime.settings.gateway import DEV_ADMIN_TOKEN, GatewaySettings
from regions.runtime.settings.intake import DEV_AWARD_KEY_ID, DEV_AWARD_SECRET, IntakeSettings
from regions.runtime.settings.lifecycle import LifecycleSettings
from regions.runtime.settings.processor import ProcessorSettings
from regions.runtime.settings.production import UnsafeSettingsError
from regions.runtime.settings.projector import ProjectorSettings
from regions.runtime.settings.replicator import RegionEndpoint, ReplicatorSettings
from regions.runtime.settings.root import Mode, Settings
from regions.runtime.settings.stores import (
    MAX_PARTITIONS,
    PLAINTEXT_KAFKA,
    CassandraSettings,
    KafkaSecurity,
    KafkaSettings,
    RedisSettings,
    SaslMechanism,
)
from regions.runtime.settings.windows import WindowsSettings

__all__ = [
    "DEV_ADMIN_TOKEN",
    "DEV_AWARD_KEY_ID",
    "DEV_AWARD_SECRET",
    "MAX_PARTITIONS",
    "OPS_PREFIX",
    "PLAINTEXT_KAFKA",
    "TEST_ONLY",
    "AuditSettings",
    "CassandraSettings",
    "GatewaySettings",
    "IntakeSettings",
    "KafkaSecurity",
    "KafkaSettings",
    "LifecycleSettings",
    "Mode",
    "ProcessorSettings",
    "ProjectorSettings",
    "RedisSettings",
    "RegionEndpoint",
    "ReplicatorSettings",
    "SaslMechanism",
    "Settings",
    "UnknownSettingsError",
    "UnsafeSettingsError",
    "WindowsSettings",
    "check_environment",
    "describe_refusal",
    "load_settings",
]
