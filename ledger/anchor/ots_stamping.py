"""OpenTimestamps proofs for every anchored directory block that holds documents: submit,
upgrade, fetch headers.

One proof per root, never per document: the root is the directory block's KeyMR, so a
block costs one submission to each configured calendar, whatever its document count.

One round (``step``), over the rows of ``ledger.anchor.ots_store``:

1. **queue**: every directory block the anchoring service has submitted since the last
   round and that holds documents (``AnchorState.blocks_with_documents``, as for RFC 3161
   tokens) gets a row with the random nonce of its ``.ots`` (``ots_calendar.new_stamp``),
   stored before any calendar sees the tip.
2. **submit** (``submitting`` rows): the tip goes to each configured calendar that has not
   answered yet; every good answer is merged and kept at once. A calendar that is down,
   slow past the timeout or answers garbage is skipped and logged; once ``min_answers``
   calendars answered (m of n) the row is ``pending``; below that it stays, with its
   error, and is tried again after a back-off (``RETRY_BASE_S`` doubling to
   ``RETRY_MAX_S``), never dropped.
3. **upgrade** (``pending`` rows, each on its own back-off, ``UPGRADE_BASE_S`` doubling
   to ``UPGRADE_MAX_S`` by default, as Bitcoin takes hours): each ``PendingAttestation`` whose
   calendar is allowed (a configured one, or the reference client's default whitelist)
   is asked for its upgrade; answers are merged. When the proof holds a
   ``BitcoinBlockHeaderAttestation``, the attested header(s) are fetched from the header
   source (``HeaderSource``), checked against the attested Merkle root, and the row is
   ``complete``: the bundle then verifies offline.

The service sweeps its own pending rows each round rather than waiting for the
pipeline's ``collect`` sweep to drive it through JSON-RPC: the calendars, the header
source and the stored proof all live here, the upgrade goes on whether or not a pipeline
runs, and there is one place for its retries. The ``collect`` sweep reads what has
arrived through ``anchor-timestamps`` and records it in the audit store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass

from opentimestamps.calendar import DEFAULT_CALENDAR_WHITELIST, UrlWhitelist
from prometheus_client.core import GaugeMetricFamily, Metric

from ledger.anchor.ots_calendar import (
    NONCE_BYTES,
    CalendarClient,
    CalendarError,
    HeaderSource,
    bitcoin_points,
    merge_at_tip,
    new_stamp,
    pending_points,
    stamp_tip,
)
from ledger.anchor.ots_store import OtsRow, OtsState, OtsStore
from ledger.anchor.rounds import (
    RETRY_BASE_S,
    RETRY_MAX_S,
    STALE_ATTEMPTS,
    retry_delay,
    run_rounds,
)
from ledger.anchor.settings import AnchorSettings
from ledger.anchor.state import AnchorState
from ledger.core.clock import Clock
from ledger.core.timestamps.ots import ots_file, parse_ots
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
    "UPGRADE_BASE_S",
    "UPGRADE_MAX_S",
    "OtsAccess",
    "OtsRound",
    "OtsStamper",
    "add_ots_observability",
    "ots_access",
]

log = logging.getLogger(__name__)

UPGRADE_BASE_S = 60.0
UPGRADE_MAX_S = 3600.0
_QUEUE_BATCH = 500
_DUE_BATCH = 50


@dataclass(frozen=True)
class OtsAccess:
    """The calendars (``calendars``, of which ``min_answers`` must answer), the header
    source's URL (None: none), the timeout per request and the upgrade back-off (first
    wait, longest wait; seconds)."""

    calendars: tuple[str, ...]
    min_answers: int = 1
    headers_url: str | None = None
    timeout_s: float = 10.0
    upgrade_base_s: float = UPGRADE_BASE_S
    upgrade_max_s: float = UPGRADE_MAX_S


def ots_access(settings: AnchorSettings) -> OtsAccess | None:
    """The calendars of ``settings`` (``ots_*``), or None when none is configured.

    Raises:
        ValueError: ``ots_min`` is more than the number of calendars.
    """
    if not settings.ots_calendars:
        return None
    if settings.ots_min > len(settings.ots_calendars):
        raise ValueError(
            f"ots_min is {settings.ots_min} but only {len(settings.ots_calendars)}"
            " calendars are configured"
        )
    return OtsAccess(
        tuple(settings.ots_calendars),
        settings.ots_min,
        settings.ots_headers_url,
        settings.ots_timeout_s,
        settings.ots_upgrade_base_s,
        settings.ots_upgrade_max_s,
    )


@dataclass(frozen=True)
class OtsRound:
    """What one round did: rows queued, submitted (m of n reached), completed (a Bitcoin
    attestation and its headers) and failed calls (calendars and header source)."""

    queued: int = 0
    submitted: int = 0
    completed: int = 0
    failed: int = 0


class OtsStamper:
    """Keeps an OpenTimestamps proof of every anchored KeyMR (module docstring).

    Args:
        access: the calendars, the minimum and the header source.
        anchors: the anchoring service's state (what was submitted, by height).
        store: where the proofs are kept.
        clock: time for the back-offs (seconds since the epoch).
        calendars: the calendar client (tests pass one with a transport of theirs).
        headers: the header source (default: ``access.headers_url``'s, if any).
    """

    def __init__(
        self,
        access: OtsAccess,
        *,
        anchors: AnchorState,
        store: OtsStore,
        clock: Clock,
        calendars: CalendarClient | None = None,
        headers: HeaderSource | None = None,
    ) -> None:
        self.access = access
        self.store = store
        self._anchors = anchors
        self._clock = clock
        self._client = calendars or CalendarClient(timeout_s=access.timeout_s)
        if headers is None and access.headers_url:
            headers = HeaderSource(access.headers_url, timeout_s=access.timeout_s)
        self._headers = headers
        self._allowed = UrlWhitelist(access.calendars)
        self._refused: set[str] = set()  # calendars not asked, each logged once
        self.failures = 0
        #: The last error of each calendar or header source (None: its last call worked).
        self.faults: dict[str, str | None] = dict.fromkeys(access.calendars)

    async def aclose(self) -> None:
        await self._client.aclose()
        if self._headers is not None:
            await self._headers.aclose()

    async def run(self, stop: asyncio.Event, *, interval_s: float) -> None:
        """Run rounds every ``interval_s`` until ``stop`` is set; errors are logged."""
        await run_rounds(self.step, stop, interval_s=interval_s, what="OpenTimestamps")

    async def step(self) -> OtsRound:
        """Queue new blocks, then submit and upgrade every due row (module docstring)."""
        queued = self._queue_new_blocks()
        failures = self.failures
        due = self.store.due(self._clock.now(), _DUE_BATCH)
        before = [r.state for r in due]
        after = await asyncio.gather(*(self._advance(row) for row in due))
        moved = list(zip(before, after, strict=True))
        return OtsRound(
            queued=queued,
            submitted=sum(b == "submitting" and a != "submitting" for b, a in moved),
            completed=sum(a == "complete" for _, a in moved),
            failed=self.failures - failures,
        )

    def _queue_new_blocks(self) -> int:
        new = self._anchors.blocks_with_documents(
            after=self.store.last_height(), limit=_QUEUE_BATCH
        )
        rows = [(b.height, b.keymr, os.urandom(NONCE_BYTES)) for b in new]
        self.store.queue(rows)
        return len(rows)

    async def _advance(self, row: OtsRow) -> OtsState:
        if row.state == "submitting":
            row = await self._submit(row)
        else:
            row = await self._upgrade(row)
        self.store.save(row)
        return row.state

    async def _submit(self, row: OtsRow) -> OtsRow:
        stamp = new_stamp(row.keymr, nonce=row.nonce) if row.ots is None else parse_ots(row.ots)
        tip = stamp_tip(stamp).msg
        asked = [c for c in self.access.calendars if c not in row.answered]
        answers = await asyncio.gather(
            *(self._client.submit(c, tip) for c in asked), return_exceptions=True
        )
        answered, errors = list(row.answered), []
        for calendar, answer in zip(asked, answers, strict=True):
            if isinstance(answer, CalendarError):
                errors.append(self._fault(calendar, answer.reason, row.height))
            elif isinstance(answer, BaseException):
                raise answer
            else:
                merge_at_tip(stamp, answer)
                answered.append(calendar)
                self.faults[calendar] = None
        if answered:
            row = dataclasses.replace(row, ots=ots_file(stamp), answered=tuple(answered))
        if len(answered) >= self.access.min_answers:
            return self._reset(row, "pending", delay=self.access.upgrade_base_s)
        error = "; ".join(errors) or "too few calendars answered"
        return self._later(row, "submitting", error, base=RETRY_BASE_S, cap=RETRY_MAX_S)

    async def _upgrade(self, row: OtsRow) -> OtsRow:
        assert row.ots is not None  # pending: at least one answer is merged
        stamp = parse_ots(row.ots)
        errors = []
        if not bitcoin_points(stamp.timestamp):
            for point in list(pending_points(stamp.timestamp)):
                if not self._allowed_calendar(point.calendar):
                    continue
                try:
                    answer = await self._client.upgrade(point.calendar, point.commitment)
                except CalendarError as exc:
                    errors.append(self._fault(point.calendar, exc.reason, row.height))
                    continue
                self.faults[point.calendar] = None
                if answer is not None:
                    point.timestamp.merge(answer)
        row = dataclasses.replace(row, ots=ots_file(stamp))
        points = bitcoin_points(stamp.timestamp)
        if not points:
            error = "; ".join(errors) or None
            base, cap = self.access.upgrade_base_s, self.access.upgrade_max_s
            return self._later(row, "pending", error, base=base, cap=cap)
        headers, error = await self._fetch_headers(points, row.height)
        row = dataclasses.replace(row, headers=headers)
        if error is None:
            return self._reset(row, "complete", delay=0.0)
        return self._later(row, "pending", error, base=RETRY_BASE_S, cap=RETRY_MAX_S)

    async def _fetch_headers(
        self, points: list[tuple[int, bytes]], height: int
    ) -> tuple[tuple[bytes, ...], str | None]:
        if self._headers is None:  # nothing to fetch them from: the verifier brings its own
            return (), None
        source = self._headers.base_url
        headers = []
        for block, merkle_root in points:
            try:
                headers.append(await self._headers.header(block, merkle_root))
            except CalendarError as exc:
                return tuple(headers), self._fault(source, exc.reason, height)
        self.faults[source] = None
        return tuple(headers), None

    def _allowed_calendar(self, url: str) -> bool:
        if url in self._allowed or url in DEFAULT_CALENDAR_WHITELIST:
            return True
        if url not in self._refused:
            self._refused.add(url)
            log.warning("OpenTimestamps: not asking %s, a calendar not configured", url)
        return False

    def _fault(self, url: str, reason: str, height: int) -> str:
        self.failures += 1
        self.faults[url] = reason
        log.warning("OpenTimestamps for directory block %d: %s: %s", height, url, reason)
        return f"{url}: {reason}"

    def _later(
        self, row: OtsRow, state: OtsState, error: str | None, *, base: float, cap: float
    ) -> OtsRow:
        """``row`` in ``state``, one more attempt, next tried after ``base`` doubled per
        attempt before (at most ``cap``)."""
        delay = retry_delay(row.attempts, base_s=base, cap_s=cap)
        return dataclasses.replace(
            row,
            state=state,
            attempts=row.attempts + 1,
            last_error=None if error is None else error[:500],
            next_try=self._clock.now() + delay,
        )

    def _reset(self, row: OtsRow, state: OtsState, *, delay: float) -> OtsRow:
        """``row`` in its next ``state``, attempts from zero, tried again after ``delay``."""
        next_try = self._clock.now() + delay
        return dataclasses.replace(row, state=state, attempts=0, last_error=None, next_try=next_try)


def add_ots_observability(base: Observability, stamper: OtsStamper) -> None:
    """Add the ``ots`` readiness check and the ``notary_anchor_ots_*`` metrics to ``base``.

    ``ots`` stays ok (a calendar that is down must not keep the service from serving)
    but says ``degraded`` while a root has stayed short of m answers for
    ``STALE_ATTEMPTS`` rounds or more; its detail counts the proofs by state and the
    failed calls, and names each calendar (or header source) whose last call failed.
    Gauges: ``notary_anchor_ots_proofs{state}`` (rows by state),
    ``notary_anchor_ots_failures`` (failed calls since the start),
    ``notary_anchor_ots_calendar_ok{calendar}`` (1 when its last call worked).
    """

    async def probe() -> CheckResult:
        counts = stamper.store.counts()
        stale = stamper.store.stale(STALE_ATTEMPTS)
        detail = (
            f"{counts['complete']} complete, {counts['pending']} pending,"
            f" {counts['submitting']} short of {stamper.access.min_answers} of"
            f" {len(stamper.access.calendars)} calendars, {stamper.failures} failed calls"
        )
        faults = [f"{url}: {why}" for url, why in stamper.faults.items() if why]
        if faults:
            detail += "; " + "; ".join(faults)
        if stale:
            detail = f"degraded: {len(stale)} roots after {STALE_ATTEMPTS}+ rounds; {detail}"
        return CheckResult(True, detail, {**counts, "stale": len(stale)})

    def families() -> Iterable[Metric]:
        proofs = GaugeMetricFamily(
            "notary_anchor_ots_proofs", "OpenTimestamps proofs by state.", labels=["state"]
        )
        for state, count in stamper.store.counts().items():
            proofs.add_metric([state], count)
        ok = GaugeMetricFamily(
            "notary_anchor_ots_calendar_ok",
            "1 when the calendar's (or header source's) last call worked.",
            labels=["calendar"],
        )
        for url, why in stamper.faults.items():
            ok.add_metric([url], 0 if why else 1)
        rows = [("ots_failures", "Failed OpenTimestamps calls since the start.", stamper.failures)]
        return [proofs, ok, *gauge_families("notary_anchor", rows)]

    base.readiness.add(Check("ots", probe))
    ScrapeCollector(families, registry=base.registry)
