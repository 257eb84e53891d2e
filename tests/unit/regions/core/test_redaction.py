"""The one masking rule: URL passwords and known secret values never reach printed text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regions.core.redaction import MASK, mask_url, redact


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://:s3cret@redis:6379/0", "redis://:***@redis:6379/0"),
        ("rediss://default:s3cret@redis:6380", "rediss://default:***@redis:6380"),
        ("redis+cluster://:p%40ss:w0rd@node:7000", "redis+cluster://:***@node:7000"),
        ("redis://redis:6379/0", "redis://redis:6379/0"),
        ("redis://user@redis:6379/0", "redis://user@redis:6379/0"),
        ("http://127.0.0.1:8081/internal/awards", "http://127.0.0.1:8081/internal/awards"),
    ],
)
def test_a_url_keeps_everything_but_its_password(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_urls_inside_text_and_every_known_secret_are_masked() -> None:
    text = "Redis at redis://:pw@h:6379/0 refused; token abc-123 and key abc-123-long; in {'url': 'redis://u:x@h'}"
    assert redact(text, {"abc-123", "abc-123-long"}) == (
        "Redis at redis://:***@h:6379/0 refused; token *** and key ***; in {'url': 'redis://u:***@h'}"
    )


def test_an_empty_secret_masks_nothing() -> None:
    assert redact("nothing secret here", {""}) == "nothing secret here"


SECRET = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=20)


@given(secret=SECRET, before=st.text(max_size=30), after=st.text(max_size=30))
def test_no_known_secret_survives(secret: str, before: str, after: str) -> None:
    assert secret not in redact(before + secret + after, {secret}).replace(MASK, "\0")


@given(password=SECRET, host=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True))
def test_no_url_password_survives(password: str, host: str) -> None:
    masked = mask_url(f"redis://:{password}@{host}:6379/0")
    assert masked == f"redis://:***@{host}:6379/0"
