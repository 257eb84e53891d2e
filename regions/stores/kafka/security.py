"""How every Kafka client of the platform connects: TLS and SASL, from the settings."""

from __future__ import annotations

from typing import Any

from aiokafka.helpers import create_ssl_context

from regions.runtime.settings import KafkaSecurity, KafkaSettings


def connection_options(kafka: KafkaSettings) -> dict[str, Any]:
    """TLS and SASL arguments of every client (producer, consumer, admin) of these brokers."""
    protocol = kafka.security_protocol
    options: dict[str, Any] = {"security_protocol": protocol.value}
    if protocol in (KafkaSecurity.SSL, KafkaSecurity.SASL_SSL):
        options["ssl_context"] = create_ssl_context(cafile=kafka.ssl_cafile or None)
    if protocol in (KafkaSecurity.SASL_PLAINTEXT, KafkaSecurity.SASL_SSL):
        options |= {
            "sasl_mechanism": kafka.sasl_mechanism.value,
            "sasl_plain_username": kafka.sasl_username,
            "sasl_plain_password": kafka.sasl_password.get_secret_value(),
        }
    return options
