"""Every log record and uncaught traceback of a process, with its secrets masked.

``protect_logs`` is called by ``load_settings`` with the secrets the settings hold. From then on
every record any logger makes (the platform's, uvicorn's, the Kafka, Redis and Cassandra clients')
is a record whose message, traceback and stack text pass through ``regions.core.redaction.redact``
whenever a handler reads them; so does a traceback that ends the process. Filters still see the
record's unformatted ``msg`` and ``args`` (``LibraryNoise`` throttles by them).
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Iterable
from types import TracebackType

from regions.core.redaction import redact

_secrets: set[str] = set()


class _RedactedText:
    """A record attribute that holds text, masked as it is stored."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_redacted_{name}"

    def __get__(self, record: object, owner: type | None = None) -> str | None:
        value: str | None = getattr(record, self._slot, None)
        return value

    def __set__(self, record: object, value: str | None) -> None:
        setattr(record, self._slot, None if value is None else redact(value, _secrets))


class RedactedRecord(logging.LogRecord):
    """A log record whose message, traceback text and stack text never show a known secret."""

    exc_text = _RedactedText()
    stack_info = _RedactedText()

    def getMessage(self) -> str:
        return redact(super().getMessage(), _secrets)


def protect_logs(secrets: Iterable[str]) -> None:
    """Mask ``secrets`` (and every URL's password) in this process's logs and in a traceback that
    ends it, from now on; calling it again adds secrets."""
    _secrets.update(s for s in secrets if s)
    logging.setLogRecordFactory(RedactedRecord)
    sys.excepthook = _redacted_excepthook


def _redacted_excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    sys.stderr.write(redact("".join(traceback.format_exception(kind, exc, tb)), _secrets))
