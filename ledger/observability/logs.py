"""Logging set-up of every service and command: one line per event, text or JSON.

``configure_logging(fmt, level, secrets=...)`` installs one handler on the root logger
(standard error) and routes uvicorn's loggers (``uvicorn.error``, ``uvicorn.access``)
through it, so a server's access and error lines have the same format as the service's own.
Serve with ``uvicorn.Config(..., log_config=None)`` afterwards: uvicorn's default
configuration would give its loggers handlers of their own.

Formats (``LogFormat``):

- ``text`` (the default, for people)::

      2025-01-31T09:30:12.345Z WARNING ledger.api.outbox.worker: worker step blocks: ledger unavailable

- ``json`` (for log collectors), one object per line::

      {"ts": "2025-01-31T09:30:12.345Z", "level": "WARNING", "logger": "ledger.api.outbox.worker",
       "message": "worker step blocks: ledger unavailable"}

  with ``exc`` (the traceback as one string) when there is one, fields given with
  ``extra=`` (values that are not JSON become strings), and for uvicorn's access lines
  ``client``, ``method``, ``path``, ``http_version`` and ``status``.

One line per event in both: a message or traceback spanning lines has its line breaks
written as ``\\n`` in the text format (JSON escapes them itself).

Secrets: nothing should log one in the first place (docs/rest-api.md §2: keys are shown
once). As a second line of defence, every secret handed to ``configure_logging``
(passphrases, the callback key, RPC passwords) is replaced by ``***`` in each finished
line before it is written, whatever part of the record carried it.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable
from typing import IO, Any, Literal

import orjson

__all__ = [
    "LOG_FORMATS",
    "JsonFormatter",
    "LogFormat",
    "RedactingStreamHandler",
    "TextFormatter",
    "configure_logging",
    "formatter_for",
]

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

#: uvicorn's loggers: their lines go through the root handler (module docstring).
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
_REDACTED = "***"
#: Attributes every ``LogRecord`` has; any other attribute came from ``extra=``.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}
_ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


class _OwnFormat(logging.Formatter):
    """A formatter whose line layout is its own: the arguments a logging configuration
    passes to a formatter class (``fmt``, ``datefmt``, ``style``, ...) are accepted and
    ignored, so that configurations naming the class (Prefect's ``logging.yml``) can
    build it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()


def _timestamp(record: logging.LogRecord) -> str:
    """``record.created`` as ISO 8601 UTC with milliseconds (``2025-01-31T09:30:12.345Z``)."""
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{seconds}.{int(record.msecs):03d}Z"


class TextFormatter(_OwnFormat):
    """``<ts> <LEVEL> <logger>: <message>[ | <traceback>]`` on one line (module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname} {record.name}: {record.getMessage()}"
        if record.exc_info:
            line += " | " + self.formatException(record.exc_info)
        elif record.exc_text:
            line += " | " + record.exc_text
        return line.replace("\r", "\\r").replace("\n", "\\n")


class JsonFormatter(_OwnFormat):
    """One JSON object per record, on one line (module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.name == "uvicorn.access" and _is_access_args(record.args):
            event.update(zip(_ACCESS_FIELDS, record.args, strict=True))  # type: ignore[arg-type]
        for name, value in vars(record).items():
            if name not in _RECORD_FIELDS and name not in event:
                event[name] = value
        if record.exc_info:
            event["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            event["exc"] = record.exc_text
        return orjson.dumps(event, default=str).decode()


def _is_access_args(args: Any) -> bool:
    """uvicorn's access line: ``(client, method, path, http_version, status)``."""
    return isinstance(args, tuple) and len(args) == len(_ACCESS_FIELDS)


def formatter_for(fmt: LogFormat) -> logging.Formatter:
    """The formatter of ``fmt``.

    Raises:
        ValueError: ``fmt`` is not one of ``LOG_FORMATS``.
    """
    if fmt == "json":
        return JsonFormatter()
    if fmt == "text":
        return TextFormatter()
    raise ValueError(f"unknown log format {fmt!r}: use one of {', '.join(LOG_FORMATS)}")


class RedactingStreamHandler(logging.StreamHandler[IO[str]]):
    """A stream handler that writes each finished line with every known secret replaced.

    Args:
        stream: where lines go; None: whatever ``sys.stderr`` is when a line is written (a
            test runner may swap it).
        secrets: the values to hide (empty strings are ignored).
    """

    def __init__(self, stream: IO[str] | None = None, *, secrets: Iterable[str] = ()) -> None:
        super().__init__(stream if stream is not None else sys.stderr)
        self._follow_stderr = stream is None
        self.secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def emit(self, record: logging.LogRecord) -> None:
        if self._follow_stderr:
            self.stream = sys.stderr  # under the handler's lock (``Handler.handle``)
        super().emit(record)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        for secret in self.secrets:
            if secret in line:
                line = line.replace(secret, _REDACTED)
        return line


def configure_logging(
    fmt: LogFormat,
    level: str | int = "WARNING",
    *,
    secrets: Iterable[str] = (),
    stream: IO[str] | None = None,
) -> RedactingStreamHandler:
    """Log every record at ``level`` or above as one ``fmt`` line on ``stream`` (stderr).

    Replaces the handler an earlier call installed (calling it again changes the format);
    other handlers of the root logger are left alone. uvicorn's loggers lose their own
    handlers and propagate to the root.

    Args:
        fmt: ``"text"`` or ``"json"``.
        level: a level name (``"info"``, case-insensitive) or number.
        secrets: values never to be written (module docstring).
        stream: where lines go (standard error by default).

    Returns:
        the installed handler.

    Raises:
        ValueError: an unknown format or level name.
    """
    handler = RedactingStreamHandler(stream, secrets=secrets)
    handler.setFormatter(formatter_for(fmt))
    numeric = _level(level)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, RedactingStreamHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    return handler


def _level(level: str | int) -> int:
    if isinstance(level, int):
        return level
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    return numeric
