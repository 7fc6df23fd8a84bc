"""Fault: the callback receiver is down while entries move through the stages.

The publishing API queues each callback in its database in the same transaction as the
stage change (``ledger.api.outbox.callbacks``). While the receiver's port refuses connections,
every delivery attempt fails and is rescheduled with exponential back-off; the queue
survives an API restart; once the receiver listens again every queued callback is
delivered, signed. Delivery is at least once: a crash between the POST and its
bookkeeping repeats the POST; in these runs (no such crash) each arrives exactly once.
"""

from __future__ import annotations

import base64
import http.server
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from pydantic import SecretStr

from ledger.core.callback_signature import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    verify_callback_signature,
)
from tests.harness.ports import free_port
from tests.harness.servers import HttpServer
from tests.harness.waiting import wait_until

from .fault_stack import FaultStack

pytestmark = pytest.mark.e2e

SECRET = "fault-test-callback-secret"
STAGES = ("multi_az", "ledger", "anchor")
ENTRIES = 5


@dataclass(frozen=True)
class Delivery:
    """One callback POST as received: the exact URL, its query and whether it was signed."""

    url: str
    params: dict[str, str]
    signed: bool


class Receiver:
    """A callback receiver on ``127.0.0.1:port``: records each POST, answers 204.

    Nothing listens on the port until ``start()`` (connections are refused: the receiver
    is down); ``stop()`` closes it again.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.deliveries: list[Delivery] = []
        self._lock = threading.Lock()
        self._server: HttpServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                url = f"http://127.0.0.1:{receiver.port}{self.path}"
                signed = verify_callback_signature(
                    SECRET.encode(),
                    timestamp=int(self.headers.get(TIMESTAMP_HEADER, "0")),
                    url=url,
                    body=body,
                    signature=self.headers.get(SIGNATURE_HEADER, ""),
                )
                params = dict(parse_qsl(urlsplit(url).query))
                with receiver._lock:
                    receiver.deliveries.append(Delivery(url, params, signed))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # keep the test output quiet

        self._server = HttpServer(Handler, self.port)
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def received(self) -> list[Delivery]:
        with self._lock:
            return list(self.deliveries)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _callbacks(fs: FaultStack) -> list[dict[str, Any]]:
    """The API's callback queue (``callbacks`` table) as dicts."""
    path = fs.settings.data_dir / "api" / "api.sqlite"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM callbacks ORDER BY id")]


def _publish(client: httpx.Client, hook: str) -> tuple[str, list[tuple[str, str]]]:
    """A chain and ``ENTRIES`` entries, each with a callback for every stage.

    Returns:
        the chain ID, and ``(ref, entry_hash)`` of each write in order (``ref`` is the
        caller's own query parameter on its callback URL).
    """
    made: list[tuple[str, str]] = []
    chain = client.post(
        "/chains",
        json={
            "external_ids": [_b64(b"callback fault"), _b64(str(time.time()).encode())],
            "content": _b64(b"chain"),
            "callback_url": f"{hook}?ref=chain",
            "callback_stages": list(STAGES),
        },
    )
    assert chain.status_code == 202, chain.text
    chain_id = chain.json()["chain_id"]
    made.append(("chain", chain.json()["entry_hash"]))
    for i in range(ENTRIES):
        entry = client.post(
            f"/chains/{chain_id}/entries",
            json={
                "external_ids": [_b64(f"entry {i}".encode())],
                "content": _b64(f"content {i}".encode()),
                "callback_url": f"{hook}?ref=e{i}",
                "callback_stages": list(STAGES),
            },
        )
        assert entry.status_code == 202, entry.text
        made.append((f"e{i}", entry.json()["entry_hash"]))
    return chain_id, made


def test_callbacks_queued_while_the_receiver_is_down_are_all_delivered_after_api_restart(
    tmp_path: Path,
) -> None:
    receiver = Receiver(free_port())  # down: nothing listens on its port yet
    hook = f"http://127.0.0.1:{receiver.port}/hook"
    overrides = {
        "callback_secret": SecretStr(SECRET),
        "callback_retry_base_s": 0.2,
        "callback_retry_max_s": 1.0,
        "callback_timeout_s": 2.0,
    }
    with FaultStack(
        tmp_path / "data",
        api_overrides=overrides,
        with_anchor=True,
        collector_port=receiver.port,  # the one loopback port callbacks may reach
    ) as fs:
        headers = {"user-key": fs.api_key}
        with httpx.Client(base_url=fs.settings.api_url, headers=headers, timeout=10) as client:
            chain_id, made = _publish(client, hook)
            expected = len(made) * len(STAGES)

            # Every stage is reached and queued; each delivery failed at least twice.
            def all_queued_and_failing() -> bool:
                rows = _callbacks(fs)
                return len(rows) == expected and all(r["attempts"] >= 2 for r in rows)

            wait_until(all_queued_and_failing, timeout_s=90, what="every stage's callback")
            rows = _callbacks(fs)
            assert {r["status"] for r in rows} == {"pending"}
            assert all("Connect" in (r["last_error"] or "") for r in rows), rows[0]

            # The queue survives a restart of the API, and retries go on after it.
            before = {r["id"]: r["attempts"] for r in rows}
            fs.stop_api()
            fs.start_api()
            wait_until(
                lambda: all(r["attempts"] > before[r["id"]] for r in _callbacks(fs)),
                timeout_s=30,
                what="retries after the API restart",
            )
            assert receiver.received() == []

            receiver.start()
            try:
                up = time.monotonic()
                wait_until(
                    lambda: all(r["status"] == "delivered" for r in _callbacks(fs)),
                    timeout_s=30,
                    what="every callback delivered",
                )
                delay = time.monotonic() - up
                got = receiver.received()
            finally:
                receiver.stop()
            entries = {h: client.get(f"/chains/{chain_id}/entries/{h}").json() for _, h in made}

    assert all(d.signed for d in got), [d.url for d in got if not d.signed]
    by_key: dict[tuple[str, str], list[Delivery]] = {}
    for delivery in got:
        by_key.setdefault((delivery.params["ref"], delivery.params["stage"]), []).append(delivery)
    assert set(by_key) == {(ref, stage) for ref, _ in made for stage in STAGES}
    assert all(len(d) == 1 for d in by_key.values()), "a callback was delivered twice"
    for ref, entry_hash in made:
        entry = entries[entry_hash]
        assert by_key[ref, "multi_az"][0].params["entry_hash"] == entry_hash
        assert by_key[ref, "ledger"][0].params["dblock_keymr"] == entry["dblock_keymr"]
        assert len(by_key[ref, "anchor"][0].params["anchor_block_hash"]) == 64
    print(
        f"\n{expected} callbacks queued while the receiver was down "
        f"(attempts before the restart: {min(before.values())}-{max(before.values())}); "
        f"all delivered {delay:.1f} s after it came up"
    )


def test_a_receiver_that_never_answers_does_not_hold_up_publishing(tmp_path: Path) -> None:
    """A receiver host that accepts connections but never answers (a hung process, a
    black-holed route): each POST to it waits for the callback timeout. Those POSTs run
    beside the worker's pass (``pass_budget_s``), so an unrelated entry still reaches the
    ledger in about a block time; before, the pass waited one timeout per queued callback
    (measured: 66 s with 8 such callbacks and a 5 s timeout)."""
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(256)  # the kernel completes the handshakes; nobody reads or answers
    timeout_s, count = 3.0, 12
    hook = f"http://127.0.0.1:{hung.getsockname()[1]}/hook"
    overrides = {"callback_secret": SecretStr(SECRET), "callback_timeout_s": timeout_s}
    try:
        with FaultStack(
            tmp_path / "data",
            api_overrides=overrides,
            collector_port=hung.getsockname()[1],  # the one loopback port callbacks may reach
        ) as fs:
            headers = {"user-key": fs.api_key}
            with httpx.Client(base_url=fs.settings.api_url, headers=headers, timeout=10) as api:
                chain = api.post(
                    "/chains",
                    json={"external_ids": [_b64(b"hung receiver")], "content": _b64(b"")},
                ).json()["chain_id"]
                for i in range(count):
                    answer = api.post(
                        f"/chains/{chain}/entries",
                        json={
                            "external_ids": [_b64(f"hung {i}".encode())],
                            "callback_url": f"{hook}?ref={i}",
                            "callback_stages": ["multi_az"],
                        },
                    )
                    assert answer.status_code == 202, answer.text
                wait_until(
                    lambda: len(_callbacks(fs)) == count,
                    timeout_s=10,
                    what="the callbacks to be queued",
                )
                started = time.monotonic()
                plain = api.post(
                    f"/chains/{chain}/entries", json={"external_ids": [_b64(b"no callback")]}
                ).json()["entry_hash"]
                wait_until(
                    lambda: api.get(f"/chains/{chain}/entries/{plain}").json()["stage"] == "ledger",
                    timeout_s=count * timeout_s,
                    what="the unrelated entry to reach the ledger",
                )
                took = time.monotonic() - started
                # Every hung callback was tried and failed by the timeout; none is lost.
                wait_until(
                    lambda: all(
                        r["attempts"] >= 1 and "Timeout" in (r["last_error"] or "")
                        for r in _callbacks(fs)
                    ),
                    timeout_s=count * timeout_s,
                    what="every hung callback to time out once",
                )
                assert {r["status"] for r in _callbacks(fs)} == {"pending"}
    finally:
        hung.close()
    assert took < 3 * timeout_s, f"the worker was held up {took:.1f} s by a hung receiver"
    print(
        f"\n{count} callbacks to a hung receiver: an unrelated entry reached the ledger in "
        f"{took:.1f} s (timeout {timeout_s:.0f} s per POST)"
    )
