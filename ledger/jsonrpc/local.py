"""A blocking JSON-RPC client of an endpoint served in this process, without HTTP or JSON text.

The bundled stack (``ledger.stack``) runs the node, the wallet and the publishing API on
one event loop in one process; the API's worker thread would otherwise encode every
compose, commit and reveal as JSON, send it over loopback HTTP, and parse the answer, on
both sides of the one interpreter lock. ``LocalJsonRpcClient`` hands the request objects
to the endpoint's ``handle_batch`` on the loop that serves it instead
(``asyncio.run_coroutine_threadsafe``) and waits for the response objects, so every call
goes through the same method registry, parameter validation, batch scope, concurrency and
error objects as over HTTP (a write is still answered only once the node has journaled
it), and the replies are read by the same codec rules (``JsonRpcCodec.read_batch``).

What it does not do: credentials (an in-process caller is trusted), the body size limit
(there is no body) and JSON normalisation of values: ``params`` must hold JSON values
(str, int, float, bool, None, lists and dicts; a pydantic model is dumped by alias), and
results are the handlers' own JSON values (a top-level pydantic model dumped, as the
registry does for HTTP).

Errors (as ``ledger.jsonrpc.client``): a JSON-RPC error object is a ``JsonRpcCallError``
item of the batch (or raised by ``call``); a target that is not serving (``serving()``
False: not started yet, stopping, or the client closed), a loop that is gone, no answer
within ``timeout_s``, or an endpoint that fails outside its methods (a batch scope that
raises: over HTTP a 500) raise ``JsonRpcTransportError``, as an unreachable URL does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ledger.jsonrpc.errors import JsonRpcTransportError
from ledger.jsonrpc.server import JsonRpcEndpoint
from ledger.jsonrpc.wire import Call, JsonRpcCodec, Params, request_object

__all__ = ["LocalJsonRpcClient"]


def _always() -> bool:
    return True


class LocalJsonRpcClient:
    """Blocking client of ``endpoint`` served on ``loop`` (module docstring); thread-safe.

    Args:
        endpoint: the JSON-RPC endpoint (``app.state.jsonrpc`` of the node or wallet app).
        loop: the event loop that serves it, run by another thread than the callers'.
        url: a name for error messages (``"in-process:node"``).
        serving: whether the service is up now (checked before each request).
        timeout_s: longest wait for the answer of one request or batch, seconds.
    """

    def __init__(
        self,
        endpoint: JsonRpcEndpoint,
        loop: asyncio.AbstractEventLoop,
        *,
        url: str,
        serving: Callable[[], bool] = _always,
        timeout_s: float = 30.0,
    ) -> None:
        self._endpoint, self._loop, self._url = endpoint, loop, url
        self._serving, self._timeout_s = serving, timeout_s
        self._codec = JsonRpcCodec(url)
        self._closed = False

    @property
    def url(self) -> str:
        """The name given for error messages."""
        return self._url

    def call(self, method: str, params: Params = None) -> Any:
        """Call ``method`` with named ``params`` and return its result.

        Raises:
            JsonRpcCallError: the method answered an error object.
            JsonRpcTransportError: the service is not serving or did not answer in time.
        """
        (result,) = self._results([(method, params)])
        if isinstance(result, Exception):
            raise result
        return result

    def batch(self, calls: Sequence[Call]) -> list[Any]:
        """Run ``[(method, params), ...]`` as one batch.

        Returns:
            One item per call, in call order: the result, or a JsonRpcCallError (not raised).

        Raises:
            JsonRpcTransportError: the service is not serving or did not answer in time.
        """
        if not calls:
            return []
        return self._results(calls)

    def close(self) -> None:
        """Refuse further calls (``JsonRpcTransportError``); the endpoint is not the client's."""
        self._closed = True

    def _results(self, calls: Sequence[Call]) -> list[Any]:
        ids = [self._codec.next_id() for _ in calls]
        requests = [
            request_object(i, method, _plain(params))
            for i, (method, params) in zip(ids, calls, strict=True)
        ]
        replies = self._run(requests)
        return self._codec.read_batch(replies, ids=ids, calls=calls)

    def _run(self, requests: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
        if self._closed or not self._serving():
            raise self._unavailable("is not serving")
        if _running_loop() is self._loop:
            raise RuntimeError("a LocalJsonRpcClient cannot wait on its own event loop")
        if not self._loop.is_running():
            raise self._unavailable("has no running event loop")
        work = self._endpoint.handle_batch(requests)
        try:
            future = asyncio.run_coroutine_threadsafe(work, self._loop)
        except RuntimeError as exc:  # the loop closed meanwhile
            work.close()
            raise self._unavailable("has no running event loop") from exc
        try:
            return future.result(self._timeout_s)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise self._unavailable(f"did not answer within {self._timeout_s:g} s") from exc
        except concurrent.futures.CancelledError as exc:  # the loop stopped meanwhile
            raise self._unavailable("stopped before answering") from exc
        except Exception as exc:  # over HTTP: a 500 answer, a transport error too
            raise self._unavailable(f"failed: {type(exc).__name__}") from exc

    def _unavailable(self, problem: str) -> JsonRpcTransportError:
        return JsonRpcTransportError(f"JSON-RPC service {self._url} {problem}", url=self._url)


def _plain(params: Params) -> Any:
    """``params`` as the request object carries them (a model dumped as on the wire)."""
    if params is None or type(params) is dict:  # the usual case, without ABC checks
        return params
    if isinstance(params, BaseModel):
        return params.model_dump(mode="json", by_alias=True)
    if isinstance(params, Mapping) and not isinstance(params, dict):
        return dict(params)
    return params


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
