"""MethodRegistry without HTTP: registration rules and dispatch."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel, ValidationError

from ledger.jsonrpc import InternalError, InvalidParams, MethodNotFound, ObjectNotFound
from ledger.jsonrpc.registry import MethodRegistry, format_validation_error

from .conftest import EchoParams, build_demo

pytestmark = pytest.mark.anyio


class Nested(BaseModel):
    items: list[EchoParams]


async def test_dispatch_returns_json_ready_results() -> None:
    registry = build_demo().registry
    assert (await registry.dispatch("echo", {"text": "a", "count": 3}))["text"] == "aaa"
    assert await registry.dispatch("model") == {"entryhash": "ab" * 32, "chainid": "cd" * 32}


async def test_dispatch_errors() -> None:
    registry = build_demo().registry
    with pytest.raises(MethodNotFound):
        await registry.dispatch("missing", {})
    with pytest.raises(InvalidParams) as invalid:
        await registry.dispatch("echo", {"count": 1})
    assert invalid.value.data == "text: Field required"
    with pytest.raises(ObjectNotFound):
        await registry.dispatch("raise", {"kind": "not-found"})


async def test_unexpected_exception_is_logged_and_hidden(caplog: pytest.LogCaptureFixture) -> None:
    registry = build_demo().registry
    with caplog.at_level(logging.ERROR), pytest.raises(InternalError) as internal:
        await registry.dispatch("raise", {"kind": "crash"})
    assert internal.value.data is None
    assert "secret" not in str(internal.value)
    assert isinstance(internal.value.__cause__, RuntimeError)
    assert "'raise' failed" in caplog.text


def test_duplicate_names_and_aliases_are_refused() -> None:
    registry = MethodRegistry()
    registry.add("a", lambda: 1, aliases=("b",))
    with pytest.raises(ValueError, match="already registered"):
        registry.add("b", lambda: 2)
    with pytest.raises(ValueError, match="already registered"):
        registry.add("c", lambda: 2, aliases=("a",))
    with pytest.raises(ValueError):
        registry.add("d", lambda: 2, aliases=("d",))
    assert registry.names() == ("a", "b")
    assert "c" not in registry and len(registry) == 2


def test_params_must_be_a_model_class() -> None:
    with pytest.raises(TypeError):
        MethodRegistry().add("x", lambda p: p, params=dict)  # type: ignore[arg-type]


async def test_include_merges_registries_and_keeps_aliases() -> None:
    part = MethodRegistry()

    @part.method("coin-balance", aliases=("factoid-balance",))
    async def balance() -> int:
        return 5

    whole = MethodRegistry()
    whole.include(part)
    entry = whole.get("factoid-balance")
    assert entry is not None and entry.name == "coin-balance" and entry.is_async
    assert await whole.dispatch("factoid-balance") == 5
    assert [m.name for m in whole.methods()] == ["coin-balance"]


async def test_async_callable_object_is_detected() -> None:
    class Handler:
        async def __call__(self) -> str:
            return "called"

    registry = MethodRegistry()
    entry = registry.add("h", Handler())
    assert entry.is_async
    assert await registry.dispatch("h") == "called"


def test_format_validation_error_paths() -> None:
    with pytest.raises(ValidationError) as exc:
        Nested.model_validate({"items": [{"text": "a"}, {"count": "x"}]})
    assert format_validation_error(exc.value) == (
        "items[1].text: Field required; "
        "items[1].count: Input should be a valid integer, unable to parse string as an integer"
    )
