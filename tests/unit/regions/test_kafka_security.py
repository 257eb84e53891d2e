"""TLS and SASL settings reach every Kafka client the same way."""

from __future__ import annotations

import ssl

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from pydantic import SecretStr

from regions.runtime.settings import KafkaSecurity, KafkaSettings, SaslMechanism
from regions.stores.kafka.security import connection_options


def test_plaintext_adds_no_tls_and_no_credentials() -> None:
    assert connection_options(KafkaSettings()) == {"security_protocol": "PLAINTEXT"}


def test_sasl_over_tls_carries_the_credentials_and_verifies_the_brokers() -> None:
    kafka = KafkaSettings(
        security_protocol=KafkaSecurity.SASL_SSL,
        sasl_mechanism=SaslMechanism.SCRAM_SHA_256,
        sasl_username="leaderboard",
        sasl_password=SecretStr("s3cret"),
    )
    options = connection_options(kafka)
    context = options.pop("ssl_context")
    assert isinstance(context, ssl.SSLContext) and context.verify_mode is ssl.CERT_REQUIRED
    assert options == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "leaderboard",
        "sasl_plain_password": "s3cret",
    }


def test_sasl_without_tls_has_no_tls_context() -> None:
    options = connection_options(KafkaSettings(security_protocol=KafkaSecurity.SASL_PLAINTEXT))
    assert "ssl_context" not in options and options["sasl_mechanism"] == "SCRAM-SHA-512"


async def test_every_client_accepts_the_options() -> None:
    """aiokafka checks protocol and mechanism when a client is made (no connection is opened)."""
    for protocol in KafkaSecurity:
        options = connection_options(KafkaSettings(security_protocol=protocol, sasl_username="u"))
        await AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", **options).stop()
        await AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", **options).stop()
        AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:1", **options)
