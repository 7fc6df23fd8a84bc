"""LocalJsonRpcClient: the endpoint's answers without HTTP, read by the same codec rules."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import BaseModel

from ledger.jsonrpc import ErrorCode, JsonRpcCallError, JsonRpcCodec, JsonRpcTransportError
from ledger.jsonrpc.local import LocalJsonRpcClient
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import JsonRpcEndpoint

from .conftest import build_demo

HASH = "ab" * 32


class StepParams(BaseModel):
    name: str
    wait_for: str | None = None


class LoopThread:
    """An event loop run by a thread of its own (as the bundled stack's loop is)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10.0)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10.0)
        self.loop.close()


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    running = LoopThread()
    yield running
    running.close()


def over_the_wire(loop: LoopThread, endpoint: JsonRpcEndpoint, calls: list[Any]) -> list[Any]:
    """What a client reads for ``calls`` sent as an HTTP body: the endpoint's bytes answer,
    decoded by the client's codec."""
    codec = JsonRpcCodec("http://wire/v2")
    ids, body = codec.encode_batch(calls)
    status, content = loop.run(endpoint.handle_body(body))
    assert content is not None
    return codec.decode_batch(status, content, ids=ids, calls=calls)


def error_fields(item: Any) -> Any:
    if isinstance(item, JsonRpcCallError):
        return ("error", item.code, item.message, item.data, item.method)
    return ("result", item)


CALLS: list[Any] = [
    ("properties", None),
    ("say", {"text": "ab", "count": 2}),  # by alias, sync handler in a worker thread
    ("async-echo", {"text": "x"}),
    ("entry", {"hash": HASH}),
    ("entry", {"hash": "short"}),  # InvalidParams naming the field
    ("entry", {}),  # a required field missing
    ("add-input", {"tx-name": "t", "amount": 3}),
    ("raise", {"kind": "repeated-commit"}),
    ("raise", {"kind": "not-found"}),
    ("raise", {"kind": "crash"}),  # any other exception: InternalError without internals
    ("model", None),
    ("no-such-method", {}),
]


def test_batch_answers_every_good_and_bad_item_as_the_wire_does(loop_thread: LoopThread) -> None:
    endpoint = JsonRpcEndpoint(build_demo().registry)
    client = LocalJsonRpcClient(endpoint, loop_thread.loop, url="in-process:demo")
    local = client.batch(CALLS)
    wire = over_the_wire(loop_thread, endpoint, CALLS)
    for item in (*local, *wire):  # threads differ from call to call; nothing else may
        if isinstance(item, dict):
            item.pop("thread", None)
    assert [error_fields(x) for x in local] == [error_fields(x) for x in wire]
    codes = [x.code for x in local if isinstance(x, JsonRpcCallError)]
    assert codes == [
        ErrorCode.INVALID_PARAMS,
        ErrorCode.INVALID_PARAMS,
        ErrorCode.REPEATED_COMMIT,
        ErrorCode.OBJECT_NOT_FOUND,
        ErrorCode.INTERNAL_ERROR,
        ErrorCode.METHOD_NOT_FOUND,
    ]


def test_call_returns_the_result_or_raises_the_error_object(loop_thread: LoopThread) -> None:
    client = LocalJsonRpcClient(
        JsonRpcEndpoint(build_demo().registry), loop_thread.loop, url="in-process:demo"
    )
    assert client.call("entry", {"hash": HASH}) == {"hash": HASH}
    with pytest.raises(JsonRpcCallError) as raised:
        client.call("raise", {"kind": "locked"})
    assert raised.value.code == ErrorCode.WALLET_LOCKED and raised.value.method == "raise"
    assert client.batch([]) == []


def test_a_concurrent_batch_keeps_request_order_and_overlaps_its_items(
    loop_thread: LoopThread,
) -> None:
    registry = MethodRegistry()
    started: dict[str, asyncio.Event] = {}
    log: list[str] = []

    async def waiting_step(params: StepParams) -> str:
        log.append(f"start {params.name}")
        started.setdefault(params.name, asyncio.Event()).set()
        if params.wait_for is not None:
            await started.setdefault(params.wait_for, asyncio.Event()).wait()
        return params.name

    registry.add("wait-step", waiting_step, params=StepParams)
    endpoint = JsonRpcEndpoint(registry, concurrent_batches=True)
    client = LocalJsonRpcClient(endpoint, loop_thread.loop, url="in-process:steps", timeout_s=5)
    # item 0 waits for item 2: only possible when the items run concurrently
    calls: list[Any] = [
        ("wait-step", {"name": "a", "wait_for": "c"}),
        ("wait-step", {"name": "b"}),
        ("wait-step", {"name": "c"}),
    ]
    assert client.batch(calls) == ["a", "b", "c"]
    assert log == ["start a", "start b", "start c"]


def test_a_service_not_serving_is_unreachable_and_nothing_runs(loop_thread: LoopThread) -> None:
    demo = build_demo()
    serving = threading.Event()
    client = LocalJsonRpcClient(
        JsonRpcEndpoint(demo.registry),
        loop_thread.loop,
        url="in-process:demo",
        serving=serving.is_set,
    )
    with pytest.raises(JsonRpcTransportError, match="in-process:demo is not serving"):
        client.batch([("record", {"text": "early"})])
    serving.set()
    assert client.batch([("record", {"text": "now"})]) == ["now"]
    client.close()
    with pytest.raises(JsonRpcTransportError, match="not serving"):
        client.call("record", {"text": "late"})
    assert demo.recorded == ["now"]


def test_no_answer_in_time_is_a_transport_error(loop_thread: LoopThread) -> None:
    registry = MethodRegistry()

    @registry.method("slow")
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    client = LocalJsonRpcClient(
        JsonRpcEndpoint(registry), loop_thread.loop, url="in-process:slow", timeout_s=0.2
    )
    with pytest.raises(JsonRpcTransportError, match="did not answer within 0.2 s"):
        client.call("slow")


def test_a_closed_loop_is_a_transport_error() -> None:
    running = LoopThread()
    client = LocalJsonRpcClient(
        JsonRpcEndpoint(build_demo().registry), running.loop, url="in-process:gone"
    )
    running.close()
    with pytest.raises(JsonRpcTransportError, match="no running event loop"):
        client.call("properties")


def test_waiting_on_its_own_loop_is_refused(loop_thread: LoopThread) -> None:
    client = LocalJsonRpcClient(
        JsonRpcEndpoint(build_demo().registry), loop_thread.loop, url="in-process:demo"
    )

    async def from_the_loop() -> Any:
        return client.call("properties")

    with pytest.raises(RuntimeError, match="its own event loop"):
        loop_thread.run(from_the_loop())


def test_an_endpoint_failing_outside_its_methods_is_a_transport_error(
    loop_thread: LoopThread,
) -> None:
    @asynccontextmanager
    async def broken_scope(items: list[Any]) -> AsyncIterator[None]:
        raise RuntimeError("the signature checker is closed")
        yield

    endpoint = JsonRpcEndpoint(build_demo().registry, batch_scope=broken_scope)
    client = LocalJsonRpcClient(endpoint, loop_thread.loop, url="in-process:demo")
    with pytest.raises(JsonRpcTransportError, match="failed: RuntimeError"):
        client.call("properties")
