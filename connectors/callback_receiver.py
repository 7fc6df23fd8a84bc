"""Receiver of the publishing API's status callbacks (docs/rest-api.md §6 (Events),
``ledger/api/outbox/callbacks.py``).

The pipeline publishes each entry with ``callback_url=<receiver>/callbacks?entry_hash=<hex>``
(``callback_url_for``). When the entry reaches a stage, the API posts ``{}`` to that URL
with the stage's parameters added to the query::

    ledger   ?entry_hash=<hex>&dblock_keymr=<hex>&stage=ledger
    anchor   ?entry_hash=<hex>&anchor_block_hash=<hex>&stage=anchor
    multi_az ?entry_hash=<hex>&stage=multi_az
    failed   ?entry_hash=<hex>&reason=<text>&stage=failed   (the API gave the write up)

and signs it (``X-Notary-Timestamp``, ``X-Notary-Signature``: the rule, the signed message
and the timestamp window are ``ledger.core.callback_signature``'s, the module the API signs
with). The receiver rebuilds the signed URL from the callback URL it told the API (not from
the ``Host`` header, which a proxy may change) plus the raw query string.

What a callback does: after the signature and timestamp check, it appends one ``callback``
event to the notarization's ``stage_events`` (details: the announced ``stage`` and its
parameters, ``"verified": false``) and wakes the collector. It never changes the
notarization's stage: the collector's sweep fetches and verifies the receipt or anchor
first, and reads a given-up write's failure from the API itself
(``tasks.failed_writes``). A callback for a stage the notarization already reached, a repeated callback and a
callback for an unknown entry are answered 200 and change nothing, so the API stops
retrying. A bad or missing signature, or a stale timestamp, is answered 401 and nothing is
recorded.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlalchemy import Table, insert, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from connectors.audit import STAGE_ORDER, AuditStore
from connectors.audit.models import AUDIT_METADATA
from connectors.publishing import CallbackStage
from connectors.served_app import ServedApp, ServerStartError
from ledger.core.callback_signature import (
    MAX_SKEW_S,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    CallbackSignatureError,
    check_callback,
)
from ledger.core.clock import Clock, SystemClock
from ledger.core.hexbytes import is_hash_hex

__all__ = [
    "CALLBACK_EVENT",
    "CALLBACK_STAGES",
    "CallbackEvent",
    "CallbackRecorder",
    "CallbackServer",
    "ReceiverStartError",
    "callback_url_for",
    "create_receiver_app",
    "parse_callback",
]

#: ``stage_events.stage`` of a received callback (not a stage: reports ignore it).
CALLBACK_EVENT = "callback"
#: The stages the pipeline asks callbacks for (``multi_az`` is known from the 202 answer).
CALLBACK_STAGES: tuple[CallbackStage, ...] = ("ledger", "anchor")
#: Query parameter carrying each stage's value (docs/rest-api.md §6 (Events), table of parameters).
_STAGE_PARAMETER = {"multi_az": None, "ledger": "dblock_keymr", "anchor": "anchor_block_hash"}
#: The API's extension: a write given up, with its ``reason`` (kept up to this length).
_FAILED = "failed"
_MAX_REASON_CHARS = 500
_MAX_BODY_BYTES = 1024

_log = logging.getLogger(__name__)
_notarizations: Table = AUDIT_METADATA.tables["notarizations"]
_events: Table = AUDIT_METADATA.tables["stage_events"]


def callback_url_for(base_url: str, entry_hash: str) -> str:
    """``base_url`` with ``entry_hash=<hex>`` added to its query (other parameters kept).

    The API keeps the caller's parameters in every callback, so the entry is known at each
    stage (the ``ledger`` and ``anchor`` callbacks carry no entry hash of their own).
    """
    parts = urlsplit(base_url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "entry_hash"]
    query = urlencode([*kept, ("entry_hash", entry_hash.lower())])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


@dataclass(frozen=True)
class CallbackEvent:
    """One stage announced by the API for one entry.

    Attributes:
        entry_hash: the entry (64 lowercase hex chars).
        stage: ``multi_az``, ``ledger``, ``anchor`` or ``failed``.
        details: the stage's parameter (``dblock_keymr``, ``anchor_block_hash`` or, for
            ``failed``, the ``reason`` text), if any.
    """

    entry_hash: str
    stage: str
    details: Mapping[str, str]


def parse_callback(query: Mapping[str, str]) -> CallbackEvent:
    """The event of a callback's query parameters.

    Raises:
        ValueError: unknown stage, or a missing or malformed hex parameter.
    """
    stage = query.get("stage", "")
    if stage not in _STAGE_PARAMETER and stage != _FAILED:
        raise ValueError(f"unknown stage {stage[:40]!r}")
    entry_hash = query.get("entry_hash", "").lower()
    if not is_hash_hex(entry_hash):
        raise ValueError("entry_hash is missing or not 64 hex characters")
    if stage == _FAILED:
        return CallbackEvent(
            entry_hash, stage, {"reason": query.get("reason", "")[:_MAX_REASON_CHARS]}
        )
    details: dict[str, str] = {}
    name = _STAGE_PARAMETER[stage]
    if name is not None:
        value = query.get(name, "").lower()
        if not is_hash_hex(value):
            raise ValueError(f"{name} is missing or not 64 hex characters")
        details[name] = value
    return CallbackEvent(entry_hash, stage, details)


class CallbackRecorder:
    """Appends ``callback`` events to the audit store, at most one per notarization and stage.

    Args:
        store: the audit store (its engine is used; the store stays open by the caller).
        clock: source of time (Unix seconds) for the event's ``at``.
    """

    def __init__(self, store: AuditStore, *, clock: Clock | None = None) -> None:
        self._engine = store.engine
        self._clock: Clock = clock or SystemClock()
        # Concurrent deliveries of the same callback (the API's retries) must not both
        # pass the "already recorded" check; one process holds the receiver.
        self._lock = threading.Lock()

    def record(self, event: CallbackEvent) -> bool:
        """Record ``event`` for the notarization(s) of its entry hash.

        Returns:
            True when an event was appended; False when the entry is unknown, failed,
            already at (or past) the announced stage (for ``failed``: at ``ledger`` or
            past), or the callback was recorded before.
        """
        n, e = _notarizations.c, _events.c
        # A given-up write can only be waiting for ``ledger``.
        target = STAGE_ORDER.index("ledger" if event.stage == _FAILED else event.stage)
        at = datetime.fromtimestamp(self._clock.now(), tz=UTC)
        details = {"stage": event.stage, **event.details, "verified": False}
        with self._lock, self._engine.begin() as conn:
            rows = conn.execute(select(n.id, n.stage).where(n.entry_hash == event.entry_hash))
            behind = [
                r.id for r in rows if r.stage in STAGE_ORDER and STAGE_ORDER.index(r.stage) < target
            ]
            if not behind:
                return False
            seen = conn.execute(
                select(e.notarization_id, e.details).where(
                    e.notarization_id.in_(behind), e.stage == CALLBACK_EVENT
                )
            )
            done = {
                r.notarization_id for r in seen if (r.details or {}).get("stage") == event.stage
            }
            todo = [i for i in behind if i not in done]
            if not todo:
                return False
            conn.execute(
                insert(_events),
                [
                    {"notarization_id": i, "stage": CALLBACK_EVENT, "at": at, "details": details}
                    for i in todo
                ],
            )
        return True


EventHandler = Callable[[CallbackEvent], None]


def create_receiver_app(
    *,
    secret: bytes,
    callback_url: str,
    recorder: CallbackRecorder,
    on_recorded: EventHandler | None = None,
    max_skew_s: float = MAX_SKEW_S,
    clock: Clock | None = None,
) -> Starlette:
    """The receiver: ``POST <path of callback_url>`` (any other path: 404).

    Args:
        secret: the publishing API's HMAC key.
        callback_url: the URL given to the API (scheme, host, port and path are used to
            rebuild the signed URL).
        recorder: where events are recorded.
        on_recorded: called after an event was recorded (wakes the collector).
        max_skew_s: a signed timestamp further than this from ``clock`` is refused (401).
        clock: source of time (Unix seconds).

    Answers: 200 ``{"recorded": bool}``; 400 malformed parameters (signature valid);
    401 missing, bad or stale signature; 413 body too large.
    """
    base = urlsplit(callback_url)
    signed_base = urlunsplit((base.scheme, base.netloc, base.path, "", ""))
    now = (clock or SystemClock()).now

    def handle(request: Request, body: bytes) -> JSONResponse:
        query = request.scope.get("query_string", b"").decode("latin-1")
        url = f"{signed_base}?{query}" if query else signed_base
        try:
            check_callback(
                secret,
                url=url,
                body=body,
                timestamp_header=request.headers.get(TIMESTAMP_HEADER),
                signature_header=request.headers.get(SIGNATURE_HEADER),
                now=now(),
                max_skew_s=max_skew_s,
            )
        except CallbackSignatureError as refused:
            _log.warning("callback refused: %s", refused.reason)
            return JSONResponse({"error": refused.reason}, status_code=401)
        try:
            event = parse_callback(dict(parse_qsl(query, keep_blank_values=True)))
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        recorded = recorder.record(event)
        if recorded and on_recorded is not None:
            on_recorded(event)
        return JSONResponse({"recorded": recorded})

    async def receive(request: Request) -> JSONResponse:
        body = await request.body()
        if len(body) > _MAX_BODY_BYTES:
            return JSONResponse({"error": "body too large"}, status_code=413)
        # The audit store is synchronous: keep its work off the event loop.
        return await asyncio.to_thread(handle, request, body)

    return Starlette(routes=[Route(base.path or "/", receive, methods=["POST"])])


class ReceiverStartError(ServerStartError):
    """The receiver could not listen (address in use or not available)."""


class CallbackServer(ServedApp):
    """The receiver app served by uvicorn in a background thread.

    Args:
        app: ``create_receiver_app(...)``.
        host, port: where to listen (loopback unless told otherwise).
    """

    def __init__(self, app: Starlette, *, host: str, port: int) -> None:
        super().__init__(app, host=host, port=port, name="callback receiver")

    def start(self, *, timeout_s: float = 10.0) -> None:
        """Start listening; returns once the socket is bound.

        Raises:
            ReceiverStartError: the server did not start (port in use, bad address).
        """
        try:
            super().start(timeout_s=timeout_s)
        except ServerStartError as exc:
            raise ReceiverStartError(str(exc)) from None
