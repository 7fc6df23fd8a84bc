"""The ``concurrent_batches`` and ``batch_scope`` options of the JSON-RPC endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from pydantic import BaseModel

from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import create_jsonrpc_app, run_stepped

from .conftest import request

pytestmark = pytest.mark.anyio


class Step(BaseModel):
    name: str
    wait_for: str | None = None


def build(log: list[str]) -> tuple[MethodRegistry, dict[str, asyncio.Event]]:
    """``step``: logs "start name", waits for another step to have started, logs "end name"."""
    registry = MethodRegistry()
    started: dict[str, asyncio.Event] = {}

    def event(name: str) -> asyncio.Event:
        return started.setdefault(name, asyncio.Event())

    @registry.method("step", params=Step)
    async def step(params: Step) -> str:
        log.append(f"start {params.name}")
        event(params.name).set()
        if params.wait_for is not None:
            await event(params.wait_for).wait()
        await asyncio.sleep(0)
        log.append(f"end {params.name}")
        return params.name

    return registry, started


async def post(app: Any, payload: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://rpc") as client:
        return await client.post("/v2", content=orjson.dumps(payload))


async def test_concurrent_batch_starts_items_in_order_and_overlaps_their_waits() -> None:
    log: list[str] = []
    registry, _ = build(log)
    app = create_jsonrpc_app(registry, concurrent_batches=True)
    # item 0 waits for item 2: only possible when the items run concurrently
    batch = [
        request("step", {"name": "a", "wait_for": "c"}, request_id=0),
        request("step", {"name": "b"}, request_id=1),
        request("step", {"name": "c"}, request_id=2),
    ]
    response = await asyncio.wait_for(post(app, batch), timeout=5)
    assert [item["result"] for item in response.json()] == ["a", "b", "c"]  # request order
    assert log[:3] == ["start a", "start b", "start c"]
    assert log.index("end a") > log.index("start c")


async def test_sequential_batch_is_the_default() -> None:
    log: list[str] = []
    registry, _ = build(log)
    app = create_jsonrpc_app(registry)
    batch = [request("step", {"name": str(i)}, request_id=i) for i in range(3)]
    response = await post(app, batch)
    assert [item["result"] for item in response.json()] == ["0", "1", "2"]
    assert log == ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]
    assert app.state.jsonrpc.concurrent_batches is False


async def test_batch_scope_wraps_each_batch_once_and_sees_its_items() -> None:
    log: list[str] = []
    registry, _ = build(log)

    @asynccontextmanager
    async def scope(items: list[Any]) -> AsyncIterator[None]:
        log.append(f"enter {len(items)}")
        try:
            yield
        finally:
            log.append("exit")

    app = create_jsonrpc_app(registry, concurrent_batches=True, batch_scope=scope)
    batch = [request("step", {"name": "x"}), request("step", {"name": "y"}, request_id=...), 5]
    body = (await post(app, batch)).json()
    assert [item.get("result") for item in body] == ["x", None]  # notification unanswered
    assert body[1]["error"]["code"] == -32600
    assert log[0] == "enter 3" and log[-1] == "exit"
    assert sorted(log[1:-1]) == ["end x", "end y", "start x", "start y"]
    # single requests and empty batches do not enter the scope
    log.clear()
    await post(app, request("step", {"name": "z"}))
    await post(app, [])
    assert log == ["start z", "end z"]


async def test_concurrent_batch_keeps_errors_and_notifications_in_place() -> None:
    registry, _ = build([])
    app = create_jsonrpc_app(registry, concurrent_batches=True)
    batch = [
        request("nope", request_id="first"),
        request("step", {"name": "n"}, request_id=...),
        request("step", {}, request_id="bad"),
        request("step", {"name": "ok"}, request_id="last"),
    ]
    body = (await post(app, batch)).json()
    assert [item["id"] for item in body] == ["first", "bad", "last"]
    assert body[0]["error"]["code"] == -32601
    assert body[1]["error"]["code"] == -32602
    assert body[2]["result"] == "ok"
    only_notifications = await post(app, [request("step", {"name": "q"}, request_id=...)])
    assert (only_notifications.status_code, only_notifications.content) == (204, b"")


async def test_concurrent_batch_of_loop_handlers_runs_them_in_turn_without_tasks() -> None:
    """Sync handlers run on the loop never suspend: the batch's answers are the same one
    after the other, so no task is made per item; a batch with another kind still gets
    one each."""
    registry = MethodRegistry()
    tasks: list[int] = []

    @registry.method("where", blocking=False)
    def where() -> int:
        tasks.append(id(asyncio.current_task()))
        return len(tasks)

    @registry.method("pause")
    async def pause() -> str:
        await asyncio.sleep(0)
        return "paused"

    app = create_jsonrpc_app(registry, concurrent_batches=True)
    calls = [{"jsonrpc": "2.0", "id": i, "method": "where"} for i in range(3)]
    answers = (await post(app, calls)).json()
    assert [(a["id"], a["result"]) for a in answers] == [(0, 1), (1, 2), (2, 3)]
    assert len(set(tasks)) == 1  # the request's own task
    tasks.clear()
    mixed = [*calls, {"jsonrpc": "2.0", "id": 9, "method": "pause"}]
    answers = (await post(app, mixed)).json()
    assert [a["result"] for a in answers] == [1, 2, 3, "paused"]
    assert len(set(tasks)) == 3  # a task per item


def stepped_registry(log: list[str], tasks: list[int]) -> MethodRegistry:
    """``step`` as a stepped method (it awaits only futures of its loop), plus a
    loop-run sync method and a non-stepped async one."""
    registry = MethodRegistry()
    started: dict[str, asyncio.Future[None]] = {}

    def started_future(name: str) -> asyncio.Future[None]:
        if name not in started:
            started[name] = asyncio.get_running_loop().create_future()
        return started[name]

    @registry.method("step", params=Step, stepped=True)
    async def step(params: Step) -> str:
        tasks.append(id(asyncio.current_task()))
        log.append(f"start {params.name}")
        mine = started_future(params.name)
        if not mine.done():
            mine.set_result(None)
        if params.wait_for is not None:
            await started_future(params.wait_for)
        log.append(f"end {params.name}")
        if params.name == "boom":
            raise ValueError("handler failure")  # the registry answers Internal error
        return params.name

    @registry.method("where", blocking=False)
    def where() -> str:
        tasks.append(id(asyncio.current_task()))
        return "here"

    @registry.method("pause")
    async def pause() -> str:
        tasks.append(id(asyncio.current_task()))
        await asyncio.sleep(0)
        return "paused"

    return registry


async def test_stepped_batch_runs_in_the_request_task_and_still_overlaps_waits() -> None:
    log: list[str] = []
    tasks: list[int] = []
    app = create_jsonrpc_app(stepped_registry(log, tasks), concurrent_batches=True)
    # items 0 and 1 wait for item 3: only possible when they run concurrently
    batch = [
        request("step", {"name": "a", "wait_for": "c"}, request_id=0),
        request("step", {"name": "b", "wait_for": "c"}, request_id=1),
        request("where", request_id=2),
        request("step", {"name": "c"}, request_id=3),
        request("step", {"name": "boom"}, request_id=4),
    ]
    body = (await asyncio.wait_for(post(app, batch), timeout=5)).json()
    assert [item.get("result") for item in body] == ["a", "b", "here", "c", None]
    assert body[4]["error"]["code"] == -32603
    # started in request order, the waiting ones resumed in request order
    assert log == [
        "start a",
        "start b",
        "start c",
        "end c",
        "start boom",
        "end boom",
        "end a",
        "end b",
    ]
    assert len(set(tasks)) == 1  # no task per item
    tasks.clear()
    mixed = [request("step", {"name": "d"}, request_id=0), request("pause", request_id=1)]
    body = (await post(app, mixed)).json()
    assert [item["result"] for item in body] == ["d", "paused"]
    assert len(set(tasks)) == 2  # a method that is not stepped: a task per item


async def _waits_for(gate: asyncio.Future[None], name: str, closed: list[str]) -> str:
    """Wait for ``gate``, then answer ``name``; ``name`` is noted in ``closed`` when the
    coroutine ends, however it ends (also closed before it started: not noted)."""
    try:
        await gate
        return name
    finally:
        closed.append(name)


async def test_run_stepped_closes_the_others_when_one_raises() -> None:
    closed: list[str] = []
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def fails() -> str:
        raise RuntimeError("outside the registry")

    with pytest.raises(RuntimeError, match="outside the registry"):
        await run_stepped([_waits_for(gate, "x", closed), fails(), _waits_for(gate, "y", closed)])
    assert closed == ["x"]  # started and closed; "y" was closed before it started
    assert not gate.done()


async def test_run_stepped_cancelled_closes_the_unfinished_coroutines() -> None:
    closed: list[str] = []
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def quick() -> str:
        return "quick"

    running = asyncio.ensure_future(
        run_stepped([_waits_for(gate, "x", closed), quick(), _waits_for(gate, "y", closed)])
    )
    await asyncio.sleep(0)  # every coroutine started: x and y wait for the gate
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert closed == ["x", "y"]
    assert not gate.cancelled()  # the futures waited for are not the batch's to cancel
