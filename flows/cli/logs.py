"""The command line's log lines: one line per event, text or JSON, secrets hidden.

``configure_cli_logging`` runs before every command (the ``notary`` app's callback, with
``--log-format`` / ``--log-level``, else ``NOTARY_LOG_FORMAT`` / ``NOTARY_LOG_LEVEL``). It
installs ``ledger.observability.logs``'s handler, so the lines of the pipeline, of the
services ``notary up`` runs and of their uvicorn servers share one format. In JSON mode,
Prefect's console lines use the same JSON formatter (through Prefect's ``PREFECT_LOGGING_*``
overrides of its ``logging.yml``). Secrets the command knows (the API key, the callback
key, the table URL) are hidden in every line.
"""

from __future__ import annotations

import os
from typing import cast
from urllib.parse import unquote, urlsplit

from flows.settings import MissingApiKey, MissingCallbackSecret, PipelineSettings
from ledger.observability.logs import LOG_FORMATS, LogFormat, configure_logging

__all__ = ["configure_cli_logging"]

#: Prefect's logging configuration (``prefect/logging/logging.yml``), overridden through
#: its ``PREFECT_LOGGING_*`` variables so that its console lines are ours in JSON mode.
_PREFECT_JSON_ENV = {
    "PREFECT_LOGGING_FORMATTERS_JSON_CLASS": "ledger.observability.logs.JsonFormatter",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_FORMATTER": "json",
}


def configure_cli_logging(log_format: str | None, log_level: str | None) -> None:
    """The command line's log lines: ``log_format`` / ``log_level`` when given, else
    ``NOTARY_LOG_FORMAT`` / ``NOTARY_LOG_LEVEL`` (module docstring).

    Raises:
        ValueError: an unknown format or level (from ``configure_logging``).
    """
    settings = PipelineSettings()
    fmt = log_format or settings.log_format
    if fmt not in LOG_FORMATS:
        raise ValueError(f"unknown log format {fmt!r}: use one of {', '.join(LOG_FORMATS)}")
    chosen = cast(LogFormat, fmt)
    configure_logging(chosen, log_level or settings.log_level, secrets=_known_secrets(settings))
    if chosen == "json":
        for name, value in _PREFECT_JSON_ENV.items():
            os.environ.setdefault(name, value)


def _known_secrets(settings: PipelineSettings) -> list[str]:
    """The secrets this command may hold: the API key, the callback key, the table URL."""
    found = [s.get_secret_value() for s in (settings.api_key, settings.table_url) if s]
    if settings.table_url is not None:
        password = urlsplit(settings.table_url.get_secret_value()).password
        found += [password, unquote(password)] if password else []
    for resolve in (settings.resolve_api_key, settings.resolve_callback_secret):
        try:
            value = resolve()
        except (MissingApiKey, MissingCallbackSecret, OSError):
            continue
        found.append(value.decode("utf-8") if isinstance(value, bytes) else value)
    return found
