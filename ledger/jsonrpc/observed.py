"""A method registry that reports every call to an observer (metrics of a JSON-RPC server).

``ObservedRegistry(methods, observer)`` serves the same methods as ``methods`` and calls
``observer(name, ok)`` once per dispatched call: ``name`` is the method's primary name (a
call by alias counts under it) or ``"unknown"`` for a name no method has, so that callers
cannot grow the set of names; ``ok`` is False when the call ends in a JSON-RPC error. The
observer runs on the caller's thread (the event loop) and must be cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ledger.jsonrpc.errors import JsonRpcError
from ledger.jsonrpc.registry import MethodRegistry

__all__ = ["UNKNOWN_METHOD", "CallObserver", "ObservedRegistry"]

CallObserver = Callable[[str, bool], None]
"""``observer(method_name, ok)``: one call answered (see the module docstring)."""

UNKNOWN_METHOD = "unknown"


class ObservedRegistry(MethodRegistry):
    """The methods of ``methods`` (copied), each call reported to ``observer``.

    Args:
        methods: the registry to serve.
        observer: told of every call (module docstring).
    """

    def __init__(self, methods: MethodRegistry, observer: CallObserver) -> None:
        super().__init__()
        self.include(methods)
        self._observer = observer

    async def dispatch(self, method: str, params: Any = None) -> Any:
        """``MethodRegistry.dispatch``, then the call is reported (same errors)."""
        entry = self.get(method)
        name = entry.name if entry is not None else UNKNOWN_METHOD
        try:
            result = await super().dispatch(method, params)
        except JsonRpcError:
            self._observer(name, False)
            raise
        self._observer(name, True)
        return result
