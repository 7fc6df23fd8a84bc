"""RFC 3161 tokens for every anchored directory block that holds documents: ask, check,
keep, retry.

One token per root and TSA, never per document: the root is the directory block's key
Merkle root (KeyMR), which every receipt of the block already leads to, so a thousand
documents of one block cost one request to each configured TSA.

One round (``step``):

1. **queue**: every directory block the anchoring service has submitted since the last
   round (``AnchorState.blocks_with_documents``) is queued once for each configured TSA
   (``ledger.anchor.timestamp_store``). A block that holds only the ledger's own chains and
   the anchor records is left out: no document's proof leads to it, and stamping it would
   cost a request every block time (43,200 a day at 2 s blocks) for nothing.
2. **ask**: each due row gets a request (``ledger.core.timestamps.rfc3161.build_request``:
   SHA-256 imprint of the KeyMR, a fresh 63-bit nonce, ``certReq``) POSTed as
   ``application/timestamp-query`` (RFC 3161 section 3.4), with the configured basic
   authentication or bearer token.
3. **check, then keep**: the answer is verified (status, imprint, nonce, signature,
   ``timeStamping`` usage, chain to the configured CA file) before the token is stored.
   Anything else (refused, unreachable, HTTP error, a token that does not verify) is
   logged as a warning, counted, kept in the row (``last_error``, shown by health and
   ``anchor-timestamps``) and tried again after a back-off (doubling from
   ``RETRY_BASE_S`` to ``RETRY_MAX_S``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client.core import Metric

from ledger.anchor.rounds import (
    RETRY_BASE_S,
    RETRY_MAX_S,
    STALE_ATTEMPTS,
    retry_delay,
    run_rounds,
)
from ledger.anchor.settings import AnchorSettings
from ledger.anchor.state import AnchorState
from ledger.anchor.timestamp_store import StoredToken, TimestampStore, WaitingStamp
from ledger.core.clock import Clock
from ledger.core.timestamps.errors import TimestampError
from ledger.core.timestamps.rfc3161 import build_request, verify_response
from ledger.core.timestamps.tsa_chain import TsaTrust
from ledger.observability import (
    Check,
    CheckResult,
    Observability,
    ScrapeCollector,
    gauge_families,
)

__all__ = [
    "RETRY_BASE_S",
    "RETRY_MAX_S",
    "STALE_ATTEMPTS",
    "StampRound",
    "TsaAccess",
    "TsaRequester",
    "add_timestamp_observability",
    "public_url",
    "tsa_access",
]

log = logging.getLogger(__name__)

_QUEUE_BATCH = 500
_DUE_BATCH = 50


@dataclass(frozen=True)
class TsaAccess:
    """How to reach the TSAs: URLs, the trust store their tokens must chain to, and the
    optional credentials (``basic_auth`` as ``(user, password)``, or ``bearer_token``),
    the same for every URL; ``timeout_s`` per request."""

    urls: tuple[str, ...]
    trust: TsaTrust
    basic_auth: tuple[str, str] | None = None
    bearer_token: str | None = None
    timeout_s: float = 30.0


def tsa_access(settings: AnchorSettings) -> TsaAccess | None:
    """The TSAs of ``settings`` (``tsa_*``), or None when none is configured.

    Raises:
        ValueError: URLs without ``tsa_ca_file``, a CA file without a certificate, or
            ``tsa_basic_auth`` not of the form ``user:password``.
        OSError: the CA file cannot be read.
    """
    if not settings.tsa_urls:
        return None
    if settings.tsa_ca_file is None:
        raise ValueError("a TSA needs the CA file its tokens must chain to (tsa_ca_file)")
    ca_file = Path(settings.tsa_ca_file)
    trust = TsaTrust.from_pem(ca_file.read_bytes(), name=ca_file.name)
    basic = None
    if settings.tsa_basic_auth is not None:
        user, sep, password = settings.tsa_basic_auth.get_secret_value().partition(":")
        if not sep:
            raise ValueError("tsa_basic_auth must be user:password")
        basic = (user, password)
    bearer = settings.tsa_bearer_token
    return TsaAccess(
        urls=tuple(settings.tsa_urls),
        trust=trust,
        basic_auth=basic,
        bearer_token=None if bearer is None else bearer.get_secret_value(),
        timeout_s=settings.tsa_timeout_s,
    )


@dataclass(frozen=True)
class StampRound:
    """What one round did: rows queued, tokens stored, attempts failed."""

    queued: int = 0
    stored: int = 0
    failed: int = 0


class TsaRequester:
    """Gets a verified token from every TSA of ``access`` for every anchored KeyMR.

    Args:
        access: the TSAs, their trust store and credentials.
        anchors: the anchoring service's state (what was submitted, by height).
        store: where tokens and waiting rows are kept.
        clock: time for the back-off (seconds since the epoch).
        transport: replaces the HTTP transport (tests).
    """

    def __init__(
        self,
        access: TsaAccess,
        *,
        anchors: AnchorState,
        store: TimestampStore,
        clock: Clock,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.access = access
        self.store = store
        self._anchors = anchors
        self._clock = clock
        self._failures = 0
        self._client = httpx.AsyncClient(
            timeout=access.timeout_s, transport=transport, auth=_auth(access)
        )

    @property
    def failures(self) -> int:
        """Failed attempts since the start (refusals, errors, tokens that did not verify)."""
        return self._failures

    async def aclose(self) -> None:
        await self._client.aclose()

    async def run(self, stop: asyncio.Event, *, interval_s: float) -> None:
        """Run rounds every ``interval_s`` until ``stop`` is set; errors are logged."""
        await run_rounds(self.step, stop, interval_s=interval_s, what="timestamping")

    async def step(self) -> StampRound:
        """Queue new blocks, then ask for every due token (module docstring)."""
        queued = self._queue_new_blocks()
        due = self.store.due(self._clock.now(), _DUE_BATCH)
        results = await asyncio.gather(*(self._stamp(row) for row in due))
        stored = sum(results)
        return StampRound(queued, stored, len(due) - stored)

    def _queue_new_blocks(self) -> int:
        new = self._anchors.blocks_with_documents(
            after=self.store.last_height(), limit=_QUEUE_BATCH
        )
        blocks = [(b.height, b.keymr) for b in new]
        self.store.queue(blocks, self.access.urls)
        return len(blocks) * len(self.access.urls)

    async def _stamp(self, row: WaitingStamp) -> bool:
        nonce = secrets.randbits(63) + 1
        try:
            reply = await self._post(row.tsa, build_request(row.keymr, nonce=nonce))
            token, verdict = verify_response(
                reply, digest=row.keymr, trust=self.access.trust, nonce=nonce
            )
        except httpx.HTTPStatusError as exc:  # its text holds the URL: say only the status
            self._failed(row, f"HTTP {exc.response.status_code}")
            return False
        except (httpx.HTTPError, TimestampError) as exc:
            self._failed(row, f"{type(exc).__name__}: {exc}")
            return False
        stored = StoredToken(
            row.height,
            row.keymr,
            row.tsa,
            token,
            verdict.gen_time.isoformat(),
            str(verdict.serial),
            verdict.tsa,
        )
        self.store.store_token(row, stored)
        return True

    async def _post(self, url: str, request: bytes) -> bytes:
        headers = {"Content-Type": "application/timestamp-query"}
        response = await self._client.post(url, content=request, headers=headers)
        response.raise_for_status()
        return response.content

    def _failed(self, row: WaitingStamp, error: str) -> None:
        self._failures += 1
        delay = retry_delay(row.attempts)
        self.store.record_failure(row, error[:500], next_try_s=self._clock.now() + delay)
        log.warning(
            "timestamp of directory block %d refused (%s, attempt %d, next in %.0f s): %s",
            row.height,
            public_url(row.tsa),
            row.attempts + 1,
            delay,
            error,
        )


def _auth(access: TsaAccess) -> httpx.Auth | None:
    if access.basic_auth is not None:
        return httpx.BasicAuth(*access.basic_auth)
    if access.bearer_token is not None:
        return _Bearer(access.bearer_token)
    return None


class _Bearer(httpx.Auth):
    """``Authorization: Bearer <token>`` on every request (RFC 6750 section 2.1)."""

    def __init__(self, token: str) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


def public_url(url: str) -> str:
    """``url`` without its user and password (what logs and answers may show)."""
    return str(httpx.URL(url).copy_with(username=None, password=None))


def add_timestamp_observability(base: Observability, stamper: TsaRequester) -> None:
    """Add the ``tsa`` readiness check and the ``notary_anchor_tsa_*`` gauges to ``base``.

    ``tsa`` stays ok (a TSA that is down must not keep the service, or a restarted stack
    waiting for readiness, from serving) but says ``degraded`` while a root has waited
    ``STALE_ATTEMPTS`` failed attempts or more; its detail counts the stored tokens, the
    waiting roots and the failures, with the last error, and its figures hold the counts. Gauges: ``notary_anchor_tsa_tokens`` (stored), ``..._tsa_waiting`` (rows
    without a token, at most 1,000 counted), ``..._tsa_failures`` (failed attempts since
    the start).
    """

    async def probe() -> CheckResult:
        waiting = stamper.store.waiting()
        stale = [w for w in waiting if w.attempts >= STALE_ATTEMPTS]
        tokens = stamper.store.count_tokens()
        detail = f"{tokens} tokens, {len(waiting)} waiting, {stamper.failures} failed attempts"
        errors = [w for w in waiting if w.last_error]
        if errors:
            detail += f"; last error ({public_url(errors[-1].tsa)}): {errors[-1].last_error}"
        if stale:
            detail = f"degraded: {len(stale)} roots after {STALE_ATTEMPTS}+ failures; {detail}"
        figures = {"tokens": tokens, "waiting": len(waiting), "stale": len(stale)}
        return CheckResult(True, detail, figures)

    def families() -> Iterable[Metric]:
        rows = (
            ("tsa_tokens", "RFC 3161 tokens stored.", stamper.store.count_tokens()),
            (
                "tsa_waiting",
                "Roots still without a token from a TSA.",
                len(stamper.store.waiting()),
            ),
            ("tsa_failures", "Failed TSA attempts since the start.", stamper.failures),
        )
        return gauge_families("notary_anchor", rows)

    base.readiness.add(Check("tsa", probe))
    ScrapeCollector(families, registry=base.registry)
