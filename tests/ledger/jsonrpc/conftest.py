"""Fixtures: a small demo registry served through httpx.ASGITransport or a real uvicorn server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest
from pydantic import BaseModel, Field, field_validator
from starlette.applications import Starlette

from ledger.jsonrpc import (
    IncorrectPassphrase,
    InternalError,
    InvalidParams,
    MissingChainHead,
    ObjectNotFound,
    ReceiptCreationError,
    RepeatedCommit,
    WalletLocked,
)
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import create_jsonrpc_app

REPEATED_HASH = bytes.fromhex("11" * 32)


class EchoParams(BaseModel):
    text: str
    count: int = 1


class HashParams(BaseModel):
    hash: str

    @field_validator("hash")
    @classmethod
    def _check_hash(cls, value: str) -> str:
        if len(value) != 64:
            raise ValueError("Invalid Hash")
        return value


class TxParams(BaseModel):
    tx_name: str = Field(alias="tx-name")
    amount: int


class RaiseParams(BaseModel):
    kind: str


class EntryOut(BaseModel):
    entry_hash: str = Field(alias="entryhash")
    chain_id: str = Field(alias="chainid")


ERRORS: dict[str, Callable[[], Exception]] = {
    "not-found": lambda: ObjectNotFound(ObjectNotFound.ENTRY),
    "missing-chain-head": MissingChainHead,
    "receipt": ReceiptCreationError,
    "repeated-commit": lambda: RepeatedCommit(REPEATED_HASH),
    "locked": WalletLocked,
    "passphrase": IncorrectPassphrase,
    "invalid-params": lambda: InvalidParams("Invalid Hash"),
    "internal": lambda: InternalError("database error"),
    "crash": lambda: RuntimeError("secret-token-123 at /srv/db.sqlite"),
}


@dataclass
class Demo:
    registry: MethodRegistry
    recorded: list[str] = field(default_factory=list)


def build_demo() -> Demo:
    """A registry exercising every handler shape: sync (thread), async, on-loop sync, no params."""
    demo = Demo(MethodRegistry())
    reg = demo.registry

    @reg.method("echo", params=EchoParams, aliases=("say",))
    def echo(params: EchoParams) -> dict[str, Any]:
        return {"text": params.text * params.count, "thread": threading.get_ident()}

    @reg.method("async-echo", params=EchoParams)
    async def async_echo(params: EchoParams) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"text": params.text, "thread": threading.get_ident()}

    @reg.method("loop-echo", params=EchoParams, blocking=False)
    def loop_echo(params: EchoParams) -> dict[str, Any]:
        return {"text": params.text, "thread": threading.get_ident()}

    @reg.method("properties", blocking=False)
    def properties() -> dict[str, str]:
        return {"nodeversion": "0.1.0", "nodeapiversion": "2.0"}

    @reg.method("entry", params=HashParams)
    def entry(params: HashParams) -> dict[str, str]:
        return {"hash": params.hash}

    @reg.method("add-input", params=TxParams)
    def add_input(params: TxParams) -> dict[str, Any]:
        return {"name": params.tx_name, "amount": params.amount}

    @reg.method("raise", params=RaiseParams)
    def fail(params: RaiseParams) -> None:
        raise ERRORS[params.kind]()

    @reg.method("model")
    def model() -> EntryOut:
        return EntryOut.model_validate({"entryhash": "ab" * 32, "chainid": "cd" * 32})

    @reg.method("nested-model")
    async def nested_model() -> dict[str, Any]:
        return {"items": [EntryOut.model_validate({"entryhash": "ef" * 32, "chainid": "01" * 32})]}

    @reg.method("unencodable")
    def unencodable() -> dict[str, Any]:
        return {"value": object()}

    @reg.method("record", params=EchoParams)
    def record(params: EchoParams) -> str:
        demo.recorded.append(params.text)
        return params.text

    return demo


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def demo() -> Demo:
    return build_demo()


@pytest.fixture
def app(demo: Demo) -> Starlette:
    return create_jsonrpc_app(demo.registry, max_body_bytes=4096)


@pytest.fixture
async def http(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
        yield client


def request(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    """A JSON-RPC request object; ``request_id=...`` (Ellipsis) makes a notification."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not ...:
        body["id"] = request_id
    if params is not None:
        body["params"] = params
    return body


async def post(client: httpx.AsyncClient, payload: Any, **kwargs: Any) -> httpx.Response:
    return await client.post("/v2", content=orjson.dumps(payload), **kwargs)
