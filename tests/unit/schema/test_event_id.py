import hashlib
import json
from importlib import resources

import pytest

from schema.event_id import event_id, payload_digest

VECTORS = json.loads(resources.files("schema.vectors").joinpath("event_id.json").read_text())


@pytest.mark.parametrize("v", VECTORS["event_id"], ids=lambda v: v["eventId"][:8])
def test_event_id_matches_golden_vector(v: dict[str, str]) -> None:
    assert event_id(v["leaderboardId"], v["matchId"], v["userId"], v["awardType"]) == v["eventId"]


@pytest.mark.parametrize("v", VECTORS["payload_digest"], ids=lambda v: v["digest"][:8])
def test_payload_digest_matches_golden_vector(v: dict[str, object]) -> None:
    assert payload_digest(v["amount"], v["occurredAtMs"]) == v["digest"]  # type: ignore[arg-type]


def test_event_id_is_sha256_of_length_prefixed_fields() -> None:
    framed = b"".join(len(p).to_bytes(4, "big") + p for p in [b"award.v1", b"b", b"m", b"u", b"t"])
    assert event_id("b", "m", "u", "t") == hashlib.sha256(framed).hexdigest()[:32]


def test_separator_inside_a_field_cannot_collide() -> None:
    assert event_id("b", "m|1", "u", "t") != event_id("b", "m", "1|u", "t")
