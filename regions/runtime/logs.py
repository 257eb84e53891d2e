"""How the platform's processes log.

- Log lines that repeat (a store that is down, a client that keeps sending bad requests) go out at
  most once per interval and kind, with a count of those held back, so an outage cannot flood the
  log (``ThrottledLog``, ``LibraryNoise``).
- Every log record and uncaught traceback of a process has its secrets masked: ``protect_logs`` is
  called by ``load_settings`` with the secrets the settings hold. From then on every record any
  logger makes (the platform's, uvicorn's, the Kafka, Redis and Cassandra clients') is a record
  whose message, traceback and stack text pass through ``regions.core.redaction.redact`` whenever a
  handler reads them; so does a traceback that ends the process. Filters still see the record's
  unformatted ``msg`` and ``args`` (``LibraryNoise`` throttles by them).
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from types import TracebackType

from regions.core.redaction import redact


@dataclass(slots=True)
class Throttle:
    """Admits one event per kind and ``interval_s``; kinds come from a small fixed set."""

    interval_s: float
    clock: Callable[[], float] = time.monotonic
    _last: dict[Hashable, tuple[float, int]] = field(default_factory=dict)

    def admit(self, kind: Hashable) -> str | None:
        """None when the event is held back; otherwise a note on those held back since the last
        admitted one ("" when none were)."""
        now = self.clock()
        admitted_at, held = self._last.get(kind, (float("-inf"), 0))
        if now - admitted_at < self.interval_s:
            self._last[kind] = (admitted_at, held + 1)
            return None
        self._last[kind] = (now, 0)
        return f" (and {held} more like it in the last {now - admitted_at:.0f}s)" if held else ""


@dataclass(slots=True)
class ThrottledLog:
    """One line per ``kind`` and ``interval_s``; the next line after the interval says how many
    were held back meanwhile."""

    logger: logging.Logger
    interval_s: float = 10.0
    clock: Callable[[], float] = time.monotonic
    _throttle: Throttle = field(init=False)

    def __post_init__(self) -> None:
        self._throttle = Throttle(self.interval_s, self.clock)

    def log(self, level: int, kind: str, message: str, *args: object) -> None:
        note = self._throttle.admit(kind)
        if note is not None:
            self.logger.log(level, message + note, *args)


class LibraryNoise(logging.Filter):
    """For a handler: records of the named libraries' loggers (the Cassandra driver logs every failed
    reconnection with a traceback) pass once per interval and message, on one line without traceback."""

    def __init__(
        self,
        libraries: tuple[str, ...],
        interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._libraries = libraries
        self._throttle = Throttle(interval_s, clock)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".")[0] not in self._libraries or record.levelno < logging.WARNING:
            return True
        note = self._throttle.admit((record.name, str(record.msg)))
        if note is None:
            return False
        if record.exc_info and record.exc_info[1] is not None:
            note = f" ({record.exc_info[1]!r})" + note
        record.msg = f"{record.msg}{note.replace('%', '%%') if record.args else note}"
        record.exc_info, record.exc_text = None, None
        return True


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
