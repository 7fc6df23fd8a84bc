"""A registry of small typed JSON-RPC handlers: method name -> function(params model) -> result.

Usage::

    registry = MethodRegistry()

    class EntryParams(BaseModel):
        hash: str

    @registry.method("entry", params=EntryParams)
    def entry(params: EntryParams) -> dict[str, Any]:   # sync: runs in a worker thread
        ...

    @registry.method("properties", blocking=False)      # no params; cheap, runs on the event loop
    def properties() -> dict[str, str]:
        ...

    result = await registry.dispatch("entry", {"hash": "00" * 32})

Handlers get their dependencies through closures built in the service's ``create_app(...)``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread
from pydantic import BaseModel, ValidationError

from ledger.jsonrpc.errors import InternalError, InvalidParams, JsonRpcError, MethodNotFound

__all__ = ["MethodRegistry", "RegisteredMethod", "format_validation_error"]

logger = logging.getLogger(__name__)

HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])

_POSITIONAL_PARAMS = "params must be an object of named fields, not an array"
_MESSAGE_PREFIXES = ("Value error, ", "Assertion failed, ")


def format_validation_error(exc: ValidationError) -> str:
    """Render a pydantic error as one human string naming each field: ``"hash: Field required"``.

    Locations use the wire (alias) names, joined with dots, list indexes in brackets
    (``"chain.firstentry.extids[0]: ..."``); several errors are joined with ``"; "``.
    Input values are never echoed (they may hold secrets).
    """
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        message = error["msg"]
        for prefix in _MESSAGE_PREFIXES:
            message = message.removeprefix(prefix)
        location = _format_location(error["loc"])
        parts.append(f"{location}: {message}" if location else message)
    return "; ".join(parts)


def _format_location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass(frozen=True, slots=True)
class RegisteredMethod:
    """One registered method; everything needed per call is precomputed here.

    Attributes:
        name: the primary method name.
        handler: ``handler(params)`` or ``handler()`` (when ``params_model`` is None), sync or async.
        params_model: the pydantic model validating ``params``, or None for a method without params.
        is_async: whether ``handler`` is a coroutine function (then it runs on the event loop).
        blocking: for sync handlers, whether to run them in a worker thread.
        aliases: further names the method answers to.
        stepped: an async handler that only awaits asyncio futures of its own loop (no
            task of its own, no anyio cancel scope, no context variables): a concurrent
            batch of such items may be run inside the batch's task
            (``ledger.jsonrpc.server``) instead of a task per item.
    """

    name: str
    handler: Callable[..., Any]
    params_model: type[BaseModel] | None
    is_async: bool
    blocking: bool
    aliases: tuple[str, ...] = field(default=())
    stepped: bool = False

    def bind(self, params: Any) -> tuple[Any, ...]:
        """Validate raw ``params`` (dict, list or None) into handler arguments.

        Raises:
            InvalidParams: array params for a method with params, or a validation failure.
        """
        model = self.params_model
        if model is None:
            return ()
        if isinstance(params, list):
            raise InvalidParams(_POSITIONAL_PARAMS)
        try:
            return (model.model_validate({} if params is None else params),)
        except ValidationError as exc:
            raise InvalidParams(format_validation_error(exc)) from exc

    async def invoke(self, args: tuple[Any, ...]) -> Any:
        """Run the handler with bound ``args`` (off the loop for blocking sync handlers)."""
        if self.is_async:
            return await self.handler(*args)
        if self.blocking:
            return await anyio.to_thread.run_sync(self.handler, *args)
        return self.handler(*args)


def _is_coroutine_function(handler: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


class MethodRegistry:
    """Maps method names (and aliases) to :class:`RegisteredMethod` entries.

    Not thread-safe for registration; register everything before serving.
    """

    def __init__(self) -> None:
        self._methods: dict[str, RegisteredMethod] = {}

    def method(
        self,
        name: str,
        *,
        params: type[BaseModel] | None = None,
        aliases: Iterable[str] = (),
        blocking: bool = True,
        stepped: bool = False,
    ) -> Callable[[HandlerT], HandlerT]:
        """Decorator form of :meth:`add`; returns the handler unchanged."""

        def decorator(handler: HandlerT) -> HandlerT:
            self.add(
                name, handler, params=params, aliases=aliases, blocking=blocking, stepped=stepped
            )
            return handler

        return decorator

    def add(
        self,
        name: str,
        handler: Callable[..., Any],
        *,
        params: type[BaseModel] | None = None,
        aliases: Iterable[str] = (),
        blocking: bool = True,
        stepped: bool = False,
    ) -> RegisteredMethod:
        """Register ``handler`` under ``name`` and each alias.

        Args:
            name: the method name on the wire (``"commit-entry"``).
            handler: ``handler(params_model_instance)``, or ``handler()`` if ``params`` is None;
                a plain function or an ``async def``.
            params: pydantic v2 model for the ``params`` object, or None for a method without params.
            aliases: other names accepted for the same method (``"factoid-submit"``).
            blocking: sync handlers only: run in a worker thread (True, default) or directly on
                the event loop (False; only for cheap, non-blocking handlers).
            stepped: async handlers only: it awaits nothing but asyncio futures of its loop
                (``RegisteredMethod.stepped``).

        Raises:
            ValueError: a name or alias is already registered.
            TypeError: ``params`` is not a pydantic model class.
        """
        if params is not None and not (isinstance(params, type) and issubclass(params, BaseModel)):
            raise TypeError(f"params for {name!r} must be a pydantic BaseModel subclass or None")
        entry = RegisteredMethod(
            name=name,
            handler=handler,
            params_model=params,
            is_async=_is_coroutine_function(handler),
            blocking=blocking,
            aliases=tuple(aliases),
            stepped=stepped and _is_coroutine_function(handler),
        )
        names = (name, *entry.aliases)
        taken = [n for n in names if n in self._methods]
        if taken or len(set(names)) != len(names):
            raise ValueError(f"JSON-RPC method name(s) already registered: {taken or names}")
        for each in names:
            self._methods[each] = entry
        return entry

    def include(self, other: MethodRegistry) -> None:
        """Copy every method of ``other`` into this registry (ValueError on a name clash)."""
        for entry in other.methods():
            self.add(
                entry.name,
                entry.handler,
                params=entry.params_model,
                aliases=entry.aliases,
                blocking=entry.blocking,
                stepped=entry.stepped,
            )

    def get(self, name: str) -> RegisteredMethod | None:
        """The method registered under ``name`` (primary name or alias), or None."""
        return self._methods.get(name)

    def names(self) -> tuple[str, ...]:
        """Every accepted name, aliases included, sorted."""
        return tuple(sorted(self._methods))

    def methods(self) -> Iterator[RegisteredMethod]:
        """Each registered method once, in registration order."""
        seen: set[int] = set()
        for entry in self._methods.values():
            if id(entry) not in seen:
                seen.add(id(entry))
                yield entry

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def __len__(self) -> int:
        return len(self._methods)

    async def dispatch(self, method: str, params: Any = None) -> Any:
        """Validate ``params``, run the handler and return a JSON-ready result.

        Args:
            method: the method name or alias.
            params: the decoded ``params`` member: dict, list, or None when absent/null.

        Returns:
            The handler's result; a top-level pydantic model is dumped with
            ``model_dump(mode="json", by_alias=True)`` (nested models are left to the encoder).

        Raises:
            MethodNotFound: unknown name.
            InvalidParams: params do not validate (``data`` names the field).
            JsonRpcError: any JSON-RPC error the handler raised, unchanged.
            InternalError: any other handler exception (traceback logged, not returned).
        """
        entry = self._methods.get(method)
        if entry is None:
            raise MethodNotFound()
        args = entry.bind(params)
        try:
            result = await entry.invoke(args)
        except JsonRpcError:
            raise
        except Exception as exc:
            logger.exception("JSON-RPC method %r failed", method)
            raise InternalError() from exc
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json", by_alias=True)
        return result
