"""One way to start a service (``ledger.serving``): its lifespan, its uvicorn config, its
``python -m`` bootstrap.

The four services' own entry points run for real elsewhere (``tests/ledger/wallet/test_main.py``,
``tests/ledger/api/test_tls.py``, ``tests/reliability/test_node_crash.py``,
``tests/ledger/test_stack_tls.py``); here each shared piece is held to what it promises.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pydantic import SecretStr
from starlette.applications import Starlette

from ledger.anchor.settings import AnchorSettings
from ledger.node.settings import NodeSettings
from ledger.serving import (
    Address,
    run_service,
    server_config,
    service_lifespan,
)
from tests.harness.ports import free_port


def _enter_and_leave(lifespan: object) -> None:
    async def go() -> None:
        async with lifespan(None):  # type: ignore[operator]
            await asyncio.sleep(0.01)

    asyncio.run(go())


def test_the_loop_runs_while_serving_and_stops_before_the_closers_in_order() -> None:
    events: list[str] = []

    async def run(stop: asyncio.Event) -> None:
        events.append("run")
        await stop.wait()
        events.append("stopped")

    async def close_client() -> None:
        events.append("client")

    lifespan = service_lifespan(
        start=lambda: events.append("start"),
        run=run,
        close=[close_client, lambda: events.append("store")],
    )
    _enter_and_leave(lifespan)
    assert events == ["start", "run", "stopped", "client", "store"]


def test_every_closer_runs_when_one_fails_and_the_error_comes_out() -> None:
    closed: list[str] = []

    def broken() -> None:
        closed.append("broken")
        raise OSError("disk gone")

    lifespan = service_lifespan(close=[broken, lambda: closed.append("store")])
    with pytest.raises(OSError, match="disk gone"):
        _enter_and_leave(lifespan)
    assert closed == ["broken", "store"]


def test_a_loop_that_fails_still_gets_the_app_closed() -> None:
    closed: list[str] = []

    async def run(stop: asyncio.Event) -> None:
        raise RuntimeError("loop broke")

    lifespan = service_lifespan(run=run, close=[lambda: closed.append("store")])
    with pytest.raises(RuntimeError, match="loop broke"):
        _enter_and_leave(lifespan)
    assert closed == ["store"]


def test_a_start_that_fails_runs_and_closes_nothing() -> None:
    events: list[str] = []

    def start() -> None:
        raise RuntimeError("no database")

    async def run(stop: asyncio.Event) -> None:
        events.append("run")

    lifespan = service_lifespan(start=start, run=run, close=[lambda: events.append("close")])
    with pytest.raises(RuntimeError, match="no database"):
        _enter_and_leave(lifespan)
    assert events == []


def test_the_config_carries_the_address_the_tls_files_and_the_lifespan(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    settings = NodeSettings(
        data_dir=tmp_path,
        host="127.0.0.2",
        port=9123,
        tls_cert_file=cert,
        tls_key_file=key,
        tls_key_password=SecretStr("pem pass"),
    )
    config = server_config(Starlette(), settings, log_level="info", timeout_keep_alive=7)
    assert (config.host, config.port) == ("127.0.0.2", 9123)
    assert (config.ssl_certfile, config.ssl_keyfile) == (str(cert), str(key))
    assert config.ssl_keyfile_password == "pem pass"
    assert config.lifespan == "on" and config.log_config is None
    assert config.timeout_keep_alive == 7

    plain = server_config(Starlette(), Address("127.0.0.1", 0), log_level="warning")
    assert plain.ssl_certfile is None and plain.ssl_keyfile is None


@pytest.fixture
def restored_process() -> Iterator[None]:
    """``run_service`` sets the umask and the root logger, as a service process does."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    umask = os.umask(0o022)
    os.umask(umask)
    yield
    os.umask(umask)
    root.handlers[:] = handlers
    root.setLevel(level)


def test_a_service_whose_lifespan_fails_exits_with_the_startup_status(
    tmp_path: Path, restored_process: None, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "anchor-secret-never-in-a-log"
    settings = AnchorSettings(
        data_dir=tmp_path,
        port=free_port(),
        anchor_secret=SecretStr("11" * 32),
        rpc_user="ops",
        rpc_password=SecretStr(secret),
    )
    seen: list[int] = []

    @asynccontextmanager
    async def failing(_app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("the store is locked")
        yield

    def create_app(given: AnchorSettings) -> Starlette:
        seen.append(os.umask(0o077))  # the umask in force while the app is built
        logging.getLogger("ledger.test").warning("built with %s", secret)
        return Starlette(lifespan=failing)

    with pytest.raises(SystemExit) as exited:
        run_service(lambda: settings, create_app)
    assert exited.value.code == 3  # uvicorn's start-up failure
    assert seen == [0o077]  # files owner-only before anything is built
    logged = capsys.readouterr().err
    assert "built with" in logged and secret not in logged
