"""``AppServer`` and ``HttpServer``: listening once started, gone once stopped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.harness.servers import AppServer, HttpServer


def app_with_lifespan(events: list[str]) -> Starlette:
    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        events.append("start")
        yield
        events.append("stop")

    async def hello(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    return Starlette(routes=[Route("/", hello)], lifespan=lifespan)


def test_app_server_runs_the_lifespan_and_a_new_one_takes_the_same_port() -> None:
    events: list[str] = []
    with AppServer(app_with_lifespan(events)) as server:
        assert events == ["start"]
        assert httpx.get(server.url).text == "hello"
        assert server.run(asyncio.sleep(0, result="on its loop")) == "on its loop"
    assert events == ["start", "stop"]
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url)
    with AppServer(app_with_lifespan(events), server.port) as again:
        assert httpx.get(again.url).text == "hello"


def test_app_server_whose_app_fails_to_start_says_so() -> None:
    @asynccontextmanager
    async def broken(_app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield

    with pytest.raises(RuntimeError, match="did not start"):
        AppServer(Starlette(lifespan=broken)).start()


class _Teapot(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self.send_response(418)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_http_server_answers_until_stopped() -> None:
    with HttpServer(_Teapot) as server:
        assert httpx.get(server.url).status_code == 418
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url)
