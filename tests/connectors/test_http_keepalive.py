"""Tests of connectors.http_keepalive against loopback HTTP servers (real sockets)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

import pytest

from connectors.errors import ServiceUnavailable
from connectors.http_keepalive import KeepAlivePool, proxy_configured
from tests.harness.ports import free_port
from tests.harness.servers import HttpServer


class _Handler(BaseHTTPRequestHandler):
    """Echoes method, path, a header and the body; ``/close`` drops the connection after
    answering as if it stayed open (an idle timeout on the server's side)."""

    protocol_version = "HTTP/1.1"
    peers: set[tuple[str, int]]
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        body = self.rfile.read(int(self.headers["content-length"]))
        with self.lock:
            self.peers.add(self.client_address)
        answer = f"{self.command} {self.path} {self.headers['user-key']} ".encode() + body
        self.send_response(202 if self.path.endswith("/ok") else 503)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
        if self.path.startswith("/v1/close"):
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve() -> Iterator[tuple[str, set[tuple[str, int]]]]:
    peers: set[tuple[str, int]] = set()
    handler = type("Handler", (_Handler,), {"peers": peers})
    with HttpServer(handler) as server:
        yield f"{server.url}/v1", peers


def pool_for(url: str, **kwargs: object) -> KeepAlivePool:
    options = {"headers": {"user-key": "k1"}, "timeout_s": 5.0, "max_connections": 4}
    return KeepAlivePool(url, **(options | kwargs))  # type: ignore[arg-type]


def test_requests_keep_connections_alive_and_carry_prefix_headers_and_body() -> None:
    with serve() as (url, peers):
        pool = pool_for(url, max_connections=3)
        with ThreadPoolExecutor(6) as threads:
            answers = list(
                threads.map(lambda i: pool.request("POST", "/x/ok", f"b{i}".encode()), range(90))
            )
        pool.close()
    assert [a.status for a in answers] == [202] * 90
    assert [a.body for a in answers] == [f"POST /v1/x/ok k1 b{i}".encode() for i in range(90)]
    assert answers[0].headers["content-type"] == "text/plain"
    assert 1 <= len(peers) <= 3  # 90 requests, never more connections than allowed


def test_error_statuses_are_returned_not_raised() -> None:
    with serve() as (url, _peers):
        pool = pool_for(url)
        answer = pool.request("POST", "/busy", b"", content_type="application/json")
        pool.close()
    assert answer.status == 503 and answer.body.startswith(b"POST /v1/busy")


def test_connection_closed_by_server_while_idle_is_replaced() -> None:
    with serve() as (url, peers):
        pool = pool_for(url, max_connections=1)
        first = pool.request("POST", "/close/ok", b"1")
        second = pool.request("POST", "/close/ok", b"2")  # the first connection is gone
        pool.close()
    assert (first.status, second.status) == (202, 202)
    assert len(peers) == 2


def test_refused_connection_is_unavailable_and_not_sent() -> None:
    pool = pool_for(f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(ServiceUnavailable) as caught:
        pool.request("POST", "/x", b"{}")
    assert caught.value.retryable and caught.value.request_sent is False
    assert caught.value.url.endswith("/v1/x")


@contextmanager
def silent_server(*, answer: bytes | None) -> Iterator[str]:
    """Accepts connections, reads, then sends ``answer`` and closes (or never answers)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                if answer is not None:
                    conn.sendall(answer)
                else:
                    stop.wait(5)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        listener.close()


def test_connection_dropped_after_sending_is_unavailable_and_maybe_sent() -> None:
    with silent_server(answer=b"") as url:
        pool = pool_for(url)
        with pytest.raises(ServiceUnavailable) as caught:
            pool.request("POST", "/x", b"{}")
    assert caught.value.request_sent is True


def test_garbage_answer_is_unavailable() -> None:
    with silent_server(answer=b"NOT HTTP\r\n\r\n") as url:
        pool = pool_for(url)
        with pytest.raises(ServiceUnavailable):
            pool.request("POST", "/x", b"{}")


def test_read_timeout_is_unavailable_and_maybe_sent() -> None:
    with silent_server(answer=None) as url:
        pool = pool_for(url, timeout_s=0.3)
        with pytest.raises(ServiceUnavailable) as caught:
            pool.request("POST", "/x", b"{}")
    assert caught.value.request_sent is True


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        pool_for("ftp://127.0.0.1/v1")
    with pytest.raises(ValueError):
        pool_for("http://127.0.0.1/v1", max_connections=0)


def test_proxy_configured_follows_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert not proxy_configured("http://api.example:8090/v1")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert proxy_configured("http://api.example:8090/v1")
    assert not proxy_configured("https://api.example/v1")  # no proxy for https
    monkeypatch.setenv("NO_PROXY", "api.example")
    assert not proxy_configured("http://api.example:8090/v1")
