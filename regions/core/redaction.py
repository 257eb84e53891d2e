"""Secrets kept out of everything the platform prints or logs.

One rule, used by every message that may show a URL or a setting: the password of any URL
(``redis://:PASSWORD@host``, ``scheme://user:PASSWORD@host``) and every occurrence of a known secret
value (award keys, admin tokens, store passwords) are replaced by ``***``. Pure: the caller passes
the secrets it knows (``Settings.secret_values``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"

# scheme://[user]:password@ — the password runs to the '@' (a URL-safe password has no '@' or '/').
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/@:]*:)[^\s/@]+@")


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: ``redis://:***@host:6379/0``."""
    return _URL_PASSWORD.sub(rf"\g<head>{MASK}@", url)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every URL's password and every occurrence of each of ``secrets`` masked.

    Longer secrets are masked first, so a secret that contains another is masked whole; empty
    strings are not secrets."""
    masked = mask_url(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        masked = masked.replace(secret, MASK)
    return masked
