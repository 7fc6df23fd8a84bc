"""The servers the publishing API benchmark loads, each in a child process of its own.

``api``: the publishing API over an in-memory ledger (its worker off), so that what is
measured is intake: validation, the durable outbox, the answer. ``baseline``: a bare
FastAPI endpoint doing one SQLite insert and commit per request, the floor to compare with.
``server(kind, data_dir)`` starts one (``python -m bench.api_servers KIND --data-dir DIR
--port N``) and yields its loopback port; SIGTERM stops it cleanly.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tests.harness.ports import free_port
from tests.harness.waiting import wait_until

__all__ = ["server"]

REPO = Path(__file__).resolve().parents[1]


def _serve_api(data_dir: Path, port: int) -> None:
    from ledger.api.app import create_app
    from ledger.api.sandbox.memory_ledger import InMemoryLedger
    from ledger.api.settings import ApiSettings

    settings = ApiSettings(
        data_dir=data_dir,
        worker_enabled=False,
        ec_address="EC2DKSYyRcNWf7RS963VFYgMExo1824HVeCfQ9PGPmNzwrcmgm2r",
        rate_limit_per_s=1_000_000.0,
        rate_limit_burst=1_000_000,
    )
    app = create_app(settings, gateway=InMemoryLedger())
    _run_until_terminated(app, port)
    stats = app.state.services.writer.stats
    if stats.writes:
        print(
            f"  (api writer: {stats.writes} writes in {stats.batches} transactions,"
            f" {stats.mean_batch:.1f} per transaction)",
            file=sys.stderr,
        )


def _serve_baseline(data_dir: Path, port: int) -> None:
    """A bare FastAPI endpoint: one SQLite insert and commit per request (WAL, FULL)."""
    import threading

    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    connection = sqlite3.connect(data_dir / "baseline.sqlite", check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute(
        "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, chain_id TEXT,"
        " external_ids TEXT, content BLOB)"
    )
    connection.commit()
    lock = threading.Lock()
    app = FastAPI()

    @app.post("/v1/chains/{chain_id}/entries", status_code=202)
    def create_entry(chain_id: str, body: BaselineBody) -> JSONResponse:
        content = base64.b64decode(body.content or "")
        with lock:
            cursor = connection.execute(
                "INSERT INTO entries (chain_id, external_ids, content) VALUES (?, ?, ?)",
                (chain_id, json.dumps(body.external_ids or []), content),
            )
            connection.commit()
        return JSONResponse({"entry_id": cursor.lastrowid}, status_code=202)

    _run_until_terminated(app, port)


def _run_until_terminated(app: Any, port: int) -> None:
    """Serve ``app`` until SIGTERM, then shut down cleanly and return (no re-raised signal)."""
    import signal

    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    server_ = Server(config)
    signal.signal(signal.SIGTERM, lambda *_: setattr(server_, "should_exit", True))
    server_.run()


class BaselineBody(BaseModel):
    """Request body of the baseline endpoint (module level so FastAPI resolves it)."""

    external_ids: list[str] | None = None
    content: str | None = None


@contextlib.contextmanager
def server(kind: str, data_dir: Path) -> Iterator[int]:
    """Start ``kind`` (``api`` or ``baseline``) in a child process; yield its port."""
    port = free_port()
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.api_servers",
            kind,
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
        ],
        cwd=REPO,
    )
    try:
        _wait_listening(port, child)
        yield port
    finally:
        child.terminate()
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _wait_listening(port: int, child: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    def listening() -> bool:
        if child.poll() is not None:
            raise RuntimeError(f"server exited with status {child.returncode}")
        with socket.create_connection(("127.0.0.1", port), 0.2):
            return True

    wait_until(listening, timeout_s, what=f"the server on port {port}", ignoring=(OSError,))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve one benchmark server until SIGTERM.")
    parser.add_argument("kind", choices=["api", "baseline"])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    serve = _serve_api if args.kind == "api" else _serve_baseline
    serve(args.data_dir, args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
