"""A PostgreSQL audit store that refuses connections for a while (a server restart).

The server is reached through a loopback forwarder that this test starts late and stops
at will: while nothing listens, connections are refused exactly as during a restart.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from sqlalchemy.exc import OperationalError

from connectors.audit import AuditStore, DocumentIn
from tests.connectors.test_audit_store import h
from tests.harness.ports import free_port
from tests.harness.postgres import PG_URL, fresh_schema

pytestmark = pytest.mark.postgres


class Forwarder:
    """Forwards connections on ``port`` to the PostgreSQL server once ``start`` is called."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Stop listening and cut every forwarded connection (the server went away)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (Linux)
            listener.close()
        for sock in self._open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


@pytest.fixture
def forwarded(postgres_url: str) -> Iterator[tuple[Forwarder, str, str]]:
    parts = urlsplit(PG_URL)
    forwarder = Forwarder((parts.hostname or "127.0.0.1", parts.port or 5432))
    url = PG_URL.replace(parts.netloc, f"127.0.0.1:{forwarder.port}")
    with fresh_schema(prefix="test_restart") as schema:
        yield forwarder, url, schema
        forwarder.stop()


def test_store_waits_for_a_server_that_is_restarting(forwarded) -> None:
    forwarder, url, schema = forwarded
    threading.Timer(1.5, forwarder.start).start()
    start = time.monotonic()
    with AuditStore(url, schema=schema, connect_retry_s=20) as store:
        assert time.monotonic() - start >= 1.4
        [doc_id] = store.notarizations.upsert_documents(
            "folder:/x", [DocumentIn("a.pdf", h("a"), 1)]
        )
        assert doc_id > 0


def test_store_rides_through_a_restart_between_calls(forwarded) -> None:
    forwarder, url, schema = forwarded
    forwarder.start()
    with AuditStore(url, schema=schema, connect_retry_s=20) as store:
        store.notarizations.upsert_documents("folder:/x", [DocumentIn("a.pdf", h("a"), 1)])
        forwarder.stop()  # the server goes down: pooled connections die, new ones refused
        threading.Timer(1.0, forwarder.start).start()
        ids = store.notarizations.upsert_documents("folder:/x", [DocumentIn("b.pdf", h("b"), 2)])
        assert len(ids) == 1 and ids[0] > 0
        assert store.runs.summary()["pending"] == 0


def test_without_retry_a_refused_connection_fails_at_once(forwarded) -> None:
    _forwarder, url, schema = forwarded
    start = time.monotonic()
    with pytest.raises(OperationalError):
        AuditStore(url, schema=schema, connect_retry_s=0)
    assert time.monotonic() - start < 5


def test_other_connection_errors_are_not_retried(forwarded) -> None:
    forwarder, url, schema = forwarded
    forwarder.start()
    missing = url.rsplit("/", 1)[0] + f"/no_such_db_{uuid.uuid4().hex[:8]}"
    start = time.monotonic()
    with pytest.raises(OperationalError, match="does not exist"):
        AuditStore(missing, connect_retry_s=20)
    assert time.monotonic() - start < 5
