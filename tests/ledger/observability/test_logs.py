"""Log lines: one per event, text or JSON, uvicorn's included, secrets hidden."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from ledger.observability.logs import (
    JsonFormatter,
    RedactingStreamHandler,
    TextFormatter,
    configure_logging,
)

SECRET = "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"


@pytest.fixture
def root_restored() -> Iterator[None]:
    """configure_logging changes the root logger and uvicorn's: put them back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    names = ("uvicorn", "uvicorn.error", "uvicorn.access")
    uvicorn = {name: logging.getLogger(name) for name in names}
    saved = {name: (list(lg.handlers), lg.propagate, lg.level) for name, lg in uvicorn.items()}
    for logger in uvicorn.values():  # a server started by an earlier test set their levels
        logger.setLevel(logging.NOTSET)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, (old_handlers, propagate, old_level) in saved.items():
        uvicorn[name].handlers[:] = old_handlers
        uvicorn[name].propagate = propagate
        uvicorn[name].setLevel(old_level)


def emit_events(logger_name: str = "ledger.test") -> None:
    log = logging.getLogger(logger_name)
    log.warning("plain %s", "message")
    log.warning("two\nlines")
    try:
        raise ValueError(f"boom with {SECRET}")
    except ValueError:
        log.exception("failed while using %s", SECRET)
    log.error("extra fields", extra={"entry_hash": "ab" * 32, "count": 3})
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/metrics", "1.1", 200
    )
    logging.getLogger("uvicorn.error").error("Address already in use")


@pytest.mark.usefixtures("root_restored")
def test_json_lines_parse_one_per_event_and_hide_secrets() -> None:
    stream = io.StringIO()
    configure_logging("json", "info", secrets=[SECRET], stream=stream)
    emit_events()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 6  # one per event, the traceback included
    events = [json.loads(line) for line in lines]
    assert {"ts", "level", "logger", "message"} <= set(events[0])
    assert events[0]["message"] == "plain message" and events[0]["level"] == "WARNING"
    assert events[1]["message"] == "two\nlines"
    assert "Traceback" in events[2]["exc"] and "ValueError" in events[2]["exc"]
    assert events[3]["entry_hash"] == "ab" * 32 and events[3]["count"] == 3
    access = events[4]
    assert access["logger"] == "uvicorn.access"
    assert (access["method"], access["path"], access["status"]) == ("GET", "/metrics", 200)
    assert events[5]["logger"] == "uvicorn.error"
    assert SECRET not in stream.getvalue() and "***" in events[2]["exc"]


@pytest.mark.usefixtures("root_restored")
def test_text_lines_are_one_per_event_and_hide_secrets() -> None:
    stream = io.StringIO()
    configure_logging("text", "info", secrets=[SECRET], stream=stream)
    emit_events()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 6
    assert lines[0].endswith("WARNING ledger.test: plain message")
    assert lines[1].endswith("two\\nlines")
    assert "| Traceback" in lines[2]
    assert 'uvicorn.access: 127.0.0.1:5000 - "GET /metrics HTTP/1.1" 200' in lines[4]
    assert SECRET not in stream.getvalue()


@pytest.mark.usefixtures("root_restored")
def test_configuring_again_replaces_the_handler_and_the_level_holds() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("text", "warning", stream=first)
    configure_logging("json", "error", stream=second)
    logging.getLogger("ledger.test").warning("dropped")
    logging.getLogger("ledger.test").error("kept")
    assert first.getvalue() == ""
    assert [json.loads(line)["message"] for line in second.getvalue().splitlines()] == ["kept"]
    ours = [h for h in logging.getLogger().handlers if isinstance(h, RedactingStreamHandler)]
    assert len(ours) == 1


def test_unknown_format_or_level_is_refused() -> None:
    with pytest.raises(ValueError):
        configure_logging("xml", "info")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        configure_logging("text", "loud")


def test_formatters_take_logging_formatter_arguments() -> None:
    """Prefect's logging.yml builds a formatter class with (fmt, datefmt, style)."""
    assert JsonFormatter("default", None, "%")
    assert TextFormatter("%(message)s", None, "%")
