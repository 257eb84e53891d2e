"""Player profiles shown next to ranks: their rules. Pure values."""

from __future__ import annotations

import re
from dataclasses import dataclass

from regions.core.ids import text_error, user_id_error

COUNTRY = re.compile(r"^[A-Z]{2}$")
MAX_DISPLAY_NAME = 64
MAX_AVATAR_URL = 512


class InvalidProfileError(ValueError):
    """A profile breaks a rule; the message names the field and the rule."""


@dataclass(frozen=True, slots=True)
class Profile:
    user_id: str
    display_name: str
    country: str | None = None  # ISO 3166-1 alpha-2, upper case
    avatar_url: str | None = None  # http(s) URL

    def __post_init__(self) -> None:
        problems = [
            f"{name}: {problem}"
            for name, problem in [
                ("user", user_id_error(self.user_id)),
                ("name", text_error(self.display_name, MAX_DISPLAY_NAME)),
                ("country", _country_error(self.country)),
                ("avatar_url", _url_error(self.avatar_url)),
            ]
            if problem is not None
        ]
        if problems:
            raise InvalidProfileError("; ".join(problems))


def _country_error(value: str | None) -> str | None:
    if value is None or COUNTRY.match(value):
        return None
    return f"must be a two-letter ISO 3166 code in upper case such as SE, got {value!r}"


def _url_error(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.startswith(("https://", "http://")) or len(value) > MAX_AVATAR_URL:
        return f"must be an http(s) URL of at most {MAX_AVATAR_URL} characters"
    return (
        None if value.isprintable() and " " not in value else "must not contain spaces or control characters"
    )
