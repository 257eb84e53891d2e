"""Values the chart must refuse: it fails to render, and the message names the bad value."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm.chart import CHART, render

EU = CHART / "ci" / "eu-values.yaml"
Edit = Callable[[dict[str, Any]], None]


def _drop_region(v: dict[str, Any]) -> None:
    del v["global"]["region"]


def _foreign_region(v: dict[str, Any]) -> None:
    v["global"]["region"] = "ap"


def _both_award_key_sources(v: dict[str, Any]) -> None:
    v["intake"]["awardKeys"]["value"] = {"dev": "dev-secret"}


def _both_admin_token_sources(v: dict[str, Any]) -> None:
    v["gateway"]["adminToken"]["value"] = "dev-admin-token"


def _no_admin_token_source(v: dict[str, Any]) -> None:
    v["gateway"]["adminToken"] = {}


def _drop_local_datacenter(v: dict[str, Any]) -> None:
    del v["cassandra"]["localDatacenter"]


def _processors_above_partitions(v: dict[str, Any]) -> None:
    v["kafka"]["partitions"] = 4
    v["processor"]["replicas"] = 5


def _set(path: str, value: object) -> Edit:
    def edit(v: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = v
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return edit


REJECTED: dict[str, tuple[Edit, list[str]]] = {
    # The rules the chart promises operators.
    "missing global.region": (_drop_region, ["/global/region"]),
    "region not in global.regions": (_foreign_region, ['global.region "ap"', "eu, us"]),
    "award keys inline and existingSecret": (_both_award_key_sources, ["/intake/awardKeys"]),
    "admin token inline and existingSecret": (_both_admin_token_sources, ["/gateway/adminToken"]),
    "admin token from nowhere": (_no_admin_token_source, ["/gateway/adminToken"]),
    "missing cassandra.localDatacenter": (_drop_local_datacenter, ["/cassandra", "localDatacenter"]),
    "processor replicas above partitions": (
        _processors_above_partitions,
        ["processor.replicas 5", "kafka.partitions 4"],
    ),
    "kafka sasl without a password": (
        _set("kafka.sasl", {"mechanism": "SCRAM-SHA-512", "username": "lb"}),
        ["kafka.sasl.mechanism SCRAM-SHA-512 needs", "kafka.sasl.password"],
    ),
    "kafka sasl password inline and existingSecret": (
        _set("kafka.sasl.password", {"value": "x", "existingSecret": {"name": "s", "key": "k"}}),
        ["/kafka/sasl/password"],
    ),
    "cassandra user without a password": (
        _set("cassandra.username", "su"),
        ["cassandra.username and cassandra.password"],
    ),
    "kafka CA without TLS": (
        _set("kafka.tls.caSecret", {"name": "ca", "key": "ca.crt"}),
        ["kafka.tls.caSecret"],
    ),
    "unknown sasl mechanism": (_set("kafka.sasl.mechanism", "GSSAPI"), ["/kafka/sasl/mechanism"]),
    # Production mode: every store encrypted or authenticated, or explicitly in a private network.
    "production with plaintext kafka": (
        _set("mode", "production"),
        ["kafka.tls.enabled is false", "kafka.settings.allow_plaintext_in_private_network"],
    ),
    "production with redis without a password": (
        _set("mode", "production"),
        ["redis.password is not set", "redis.settings.allow_no_password_in_private_network"],
    ),
    "production with cassandra without auth": (
        _set("mode", "production"),
        ["cassandra.username is not set", "cassandra.settings.allow_no_auth_in_private_network"],
    ),
    "a switch for tests only": (
        _set("processor.settings.honour_cutoffs", False),
        ["/processor/settings", "honour_cutoffs"],
    ),
    # An invalid value of each type.
    "integer": (_set("processor.replicas", "three"), ["/processor/replicas", "want integer"]),
    "integer out of range": (_set("kafka.partitions", 0), ["/kafka/partitions", "minimum"]),
    "boolean": (_set("intake.enabled", "yes"), ["/intake/enabled", "want boolean"]),
    "string": (_set("cassandra.localDatacenter", 7), ["/cassandra/localDatacenter", "want string"]),
    "string pattern": (_set("global.region", "EU west"), ["/global/region", "pattern"]),
    "enum": (_set("mode", "prod"), ["/mode", "development", "production"]),
    "number": (
        _set("processor.settings.commit_gap_ms", "fast"),
        ["/processor/settings/commit_gap_ms", "want number"],
    ),
    "array": (_set("gateway.tolerations", "all"), ["/gateway/tolerations", "want array"]),
    "object": (_set("audit.resources", "big"), ["/audit/resources", "want object"]),
    "map of strings": (_set("projector.nodeSelector", {"zone": 1}), ["/projector/nodeSelector/zone"]),
    "unknown value": (_set("gateway.replica", 2), ["/gateway", "replica"]),
    "unknown setting": (
        _set("processor.settings.dedupe_horizon", 60),
        ["/processor/settings", "dedupe_horizon"],
    ),
    "setting the chart owns": (_set("intake.settings.port", 9000), ["/intake/settings", "port"]),
    "secret as a plain setting": (
        _set("gateway.settings.admin_token", "x"),
        ["/gateway/settings", "admin_token"],
    ),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_values_are_rejected_with_a_message_naming_them(case: str, tmp_path: Path) -> None:
    edit, expected = REJECTED[case]
    values = copy.deepcopy(yaml.safe_load(EU.read_text()))
    edit(values)
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    rendered = render(path)
    assert not rendered.ok, f"{case}: rendered although it should not"
    for text in expected:
        assert text in rendered.error, f"{case}: {text!r} not in\n{rendered.error}"


def test_the_base_of_the_rejections_renders(tmp_path: Path) -> None:
    """Each rejection above differs from these values by its one edit only."""
    assert render(EU).ok
