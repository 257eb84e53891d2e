"""Profile rules: every broken rule is named, all at once."""

from __future__ import annotations

import pytest

from regions.core.profiles import InvalidProfileError, Profile


def test_a_complete_profile_is_accepted() -> None:
    assert Profile("ann", "Ann", "SE", "https://example.com/a.png").country == "SE"
    assert Profile("ann", "Ann").avatar_url is None


def test_every_broken_rule_is_named() -> None:
    with pytest.raises(InvalidProfileError) as refused:
        Profile(" ", "", "se", "javascript:alert(1)")
    message = str(refused.value)
    for field in ("user:", "name:", "country:", "avatar_url:"):
        assert field in message
