"""Status callbacks (docs/rest-api.md §6 (Events)): target URLs, the durable queue,
signing and delivery.

Delivery: ``POST <callback_url with stage parameters>`` with the JSON body ``{}``.

=========  ======================================================
stage      query parameters added to the caller's own parameters
=========  ======================================================
multi_az   ``entry_hash``, ``stage=multi_az``
ledger     ``dblock_keymr``, ``stage=ledger``
anchor     ``anchor_block_hash``, ``stage=anchor``
failed     ``entry_hash``, ``reason``, ``stage=failed`` (an extension: sent to every write
           that asked for any callback, docs/rest-api.md §6)
=========  ======================================================

A caller parameter with the same name as one added is replaced. Callbacks are queued in
the ``callbacks`` table in the same transaction as the stage change, delivered at least
once (a crash between the POST and its bookkeeping repeats the POST: receivers should be
idempotent on ``stage`` + their own identifiers), retried with exponential back-off until
``callback_give_up_s`` after queuing. Any 2xx answer counts as delivered. The queue is the
database table, so a restart of the API loses no callback and keeps each one's back-off.

Slow receivers: the POSTs of one pass run concurrently on a small thread pool (at most a
few per receiver host, so one slow host cannot take every thread), and a pass waits for
them only ``pass_budget_s``. A receiver that accepts connections but never answers
therefore costs the worker's pass at most that budget, not one POST timeout per queued
callback; its POSTs finish (or time out) in the background and record their own outcome,
and a callback still in flight is not picked again meanwhile.

Authenticity: every POST carries ``X-Notary-Timestamp`` (Unix seconds) and
``X-Notary-Signature`` (HMAC-SHA256 over the timestamp, the exact URL posted to and the
body), the rule of ``ledger.core.callback_signature``, which receivers check with the
same module.

Callback URLs must be ``http``/``https`` ASCII URLs (RFC 3986; international host names
in their ``xn--`` form) with a valid host name or address; hosts that are (or resolve to) loopback,
private, link-local, multicast, reserved or unspecified addresses are refused unless
listed in ``callback_allowed_hosts`` (host name, IP address or CIDR network, with or
without a port: ``127.0.0.1:8092`` allows that port only). Every spelling of an address is
checked as the address (decimal, hex, short IPv4 forms, IPv4-mapped IPv6: ``HostPolicy``).
Literal addresses and ``localhost`` names are refused at acceptance (HTTP 422, the reason
naming the rule); other names are resolved and checked again before every delivery.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from sqlalchemy import Connection, Table, insert, select, update
from sqlalchemy.orm import Session

from ledger.api.db import Database
from ledger.api.errors import LedgerApiError
from ledger.api.models import CallbackRow, CallbackStatus, EntryRow, Stage
from ledger.core.callback_signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_callback
from ledger.core.clock import Clock

__all__ = [
    "DEFAULT_CALLBACK_STAGES",
    "CallbackDispatcher",
    "CallbackRefused",
    "HostPolicy",
    "callback_target",
    "callback_values",
    "check_callback_url",
    "enqueue_callback",
    "move_stage",
]

DEFAULT_CALLBACK_STAGES: tuple[str, ...] = (Stage.LEDGER.value, Stage.ANCHOR.value)
_BODY = b"{}"
_MAX_URL_CHARS = 2048
#: Printable ASCII without spaces: the characters an RFC 3986 URI may contain.
_URL_CHARS = re.compile(r"[!-~]+")
_HOST_NAME = re.compile(
    r"(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?"
)
_log = logging.getLogger(__name__)

_ENTRIES = cast(Table, EntryRow.__table__)
_CALLBACKS = cast(Table, CallbackRow.__table__)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], list[str]]


class CallbackRefused(LedgerApiError, ValueError):
    """A callback URL that may not be used. Attributes: ``url``, ``reason``."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"callback_url refused: {reason}")
        self.url = url
        self.reason = reason


def _resolve(host: str) -> list[str]:
    """Every address ``host`` resolves to (system resolver)."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]) for info in infos})


class HostPolicy:
    """Which callback targets may be reached (docs/rest-api.md §6, docs/security.md).

    The rule: a callback goes only to a public (globally routable, not multicast) address,
    or to one of the ``allowed`` targets. Every spelling of an address counts as that
    address: the legacy IPv4 forms that resolvers accept (decimal ``2130706433``, hex
    ``0x7f000001``, short ``127.1``, octal parts) and IPv4-mapped IPv6 (``::ffff:127.0.0.1``)
    are checked as the IPv4 address they name; host names are resolved and every address
    they give is checked before each delivery.

    Args:
        allowed: targets permitted although private or loopback: a host name, an IP address
            or a CIDR network (any port), or one of those with a port (``127.0.0.1:8092``,
            ``[::1]:8092``, ``collector.internal:8092``: that port only).
        resolver: host name -> addresses (default: the system resolver).
    """

    def __init__(self, allowed: Sequence[str] = (), *, resolver: Resolver | None = None) -> None:
        self._names: dict[str, int | None] = {}
        self._networks: list[tuple[IpNetwork, int | None]] = []
        for target in allowed:
            host, port = _split_target(target)
            if _is_network(host):
                self._networks.append((ipaddress.ip_network(host.strip("[]"), strict=False), port))
            else:
                self._names[host.lower()] = port
        self._allowed_text = ", ".join(allowed) or "none"
        self._resolve = resolver or _resolve

    def refusal_at_acceptance(self, url: str) -> str | None:
        """Why ``url`` is refused without DNS look-ups, or ``None`` when acceptable."""
        if len(url) > _MAX_URL_CHARS or not _URL_CHARS.fullmatch(url):
            return f"must be an ASCII URL (RFC 3986) of at most {_MAX_URL_CHARS} characters"
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            return "has an invalid port"
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return "must be an absolute http or https URL"
        port = port or _DEFAULT_PORTS[parts.scheme]
        host = parts.hostname.lower()
        address = _as_ip(host)
        if address is None and (_LEGACY_IPV4.fullmatch(host) or not _HOST_NAME.fullmatch(host)):
            return f"host {host[:80]!r} is not a valid host name or address"
        if address is None and self._name_allowed(host, port):
            return None
        if host == "localhost" or host.endswith(".localhost"):
            return self._rule(f"host {host} is a loopback name")
        if address is not None and not self._address_allowed(address, port):
            return self._rule(f"address {address} ({host}) is {_kind(address)}")
        return None

    def refusal_at_delivery(self, url: str) -> str | None:
        """Like ``refusal_at_acceptance`` plus a resolution of host names."""
        reason = self.refusal_at_acceptance(url)
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
        if reason is not None or self._name_allowed(host, port) or _as_ip(host) is not None:
            return reason
        try:
            addresses = [
                _unmapped(ipaddress.ip_address(a.split("%")[0])) for a in self._resolve(host)
            ]
        except (OSError, ValueError) as exc:
            return f"host {host} does not resolve: {exc}"
        bad = [a for a in addresses if not self._address_allowed(a, port)]
        if bad:
            return self._rule(f"host {host} resolves to {_kind(bad[0])} address {bad[0]}")
        return None

    def _rule(self, finding: str) -> str:
        """``finding`` with the rule it breaks named."""
        return (
            f"{finding}; rule: callbacks reach only public addresses or the allowed targets "
            f"(callback_allowed_hosts: {self._allowed_text})"
        )

    def _name_allowed(self, host: str, port: int) -> bool:
        if host not in self._names:
            return False
        allowed_port = self._names[host]
        return allowed_port is None or allowed_port == port

    def _address_allowed(self, address: IpAddress, port: int) -> bool:
        for network, allowed_port in self._networks:
            if address in network and (allowed_port is None or allowed_port == port):
                return True
        return address.is_global and not (address.is_multicast or address.is_reserved)


IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: The legacy IPv4 spellings ``inet_aton`` accepts: one to four decimal, octal or hex parts.
_LEGACY_IPV4 = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}")


def _split_target(target: str) -> tuple[str, int | None]:
    """An allowed target as ``(host, port or None)``: ``h``, ``h:p``, ``[v6]``, ``[v6]:p``,
    a bare IPv6 address or a CIDR network.

    Raises:
        ValueError: a port that is not a number from 1 to 65535.
    """
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        return host, _port(rest[1:]) if rest.startswith(":") else None
    if target.count(":") == 1:
        host, _, port = target.partition(":")
        return host, _port(port)
    return target, None


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"not a port: {text!r}")
    return port


def _kind(address: IpAddress) -> str:
    """What makes ``address`` non-public, in words."""
    for name in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(address, f"is_{name}"):
            return name.replace("_", "-")
    return "not globally routable"


def _unmapped(address: IpAddress) -> IpAddress:
    """The IPv4 address of an IPv4-mapped IPv6 one (``::ffff:a.b.c.d``), else ``address``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text.strip("[]"), strict=False)
    except ValueError:
        return False
    return True


def _as_ip(host: str) -> IpAddress | None:
    """The address ``host`` spells (module docstring of ``HostPolicy``), else None."""
    try:
        return _unmapped(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        pass
    if _LEGACY_IPV4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def check_callback_url(url: str, policy: HostPolicy) -> str:
    """Return ``url`` if callbacks may go there; raise ``CallbackRefused`` otherwise."""
    reason = policy.refusal_at_acceptance(url)
    if reason is not None:
        raise CallbackRefused(url, reason)
    return url


def callback_target(callback_url: str, params: dict[str, str]) -> str:
    """``callback_url`` with ``params`` added to its query (caller's own parameters kept)."""
    parts = urlsplit(callback_url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query = urlencode([*kept, *params.items()])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def enqueue_callback(
    session: Session, entry: EntryRow, stage: Stage, params: dict[str, str], *, now: float
) -> CallbackRow | None:
    """Queue the ``stage`` callback of ``entry`` if it asked for one (same transaction).

    Args:
        params: the stage's parameters without ``stage`` (e.g. ``{"dblock_keymr": hex}``).
    """
    values = callback_values(entry, stage, params, now=now)
    if values is None:
        return None
    row = CallbackRow(**values)
    session.add(row)
    return row


def move_stage(
    connection: Connection,
    where: Sequence[Any],
    stage: Stage,
    values: dict[str, Any],
    params: dict[str, str],
    *,
    now: float,
) -> list[float]:
    """Move the ``entries`` rows matching ``where`` to ``stage`` (setting ``values`` too)
    and queue the ``stage`` callback of each moved row that asked for one, in the
    caller's transaction; returns the moved rows' ``created_at`` (Unix seconds).

    One ``UPDATE ... RETURNING`` reads what the callbacks and the stage latencies need
    of the rows it changes: a ``SELECT`` of the same rows before it (for the latencies,
    for the callbacks) cost as much as the ``UPDATE`` itself, for every block followed.

    Args:
        where: SQLAlchemy conditions on the ``entries`` table.
        values: the other columns to set (``stage`` is set from ``stage``).
        params: the stage's callback parameters without ``stage``.
        now: Unix seconds, the callbacks' ``created_at`` and first ``next_attempt_at``.
    """
    e = _ENTRIES.c
    statement = (
        update(_ENTRIES)
        .where(*where)
        .values(stage=stage.value, **values)
        .returning(e.id, e.created_at, e.callback_url, e.callback_stages)
    )
    moved = connection.execute(statement).all()
    rows = [
        queued
        for row in moved
        if row.callback_url is not None
        and (queued := callback_values(row, stage, params, now=now)) is not None
    ]
    if rows:
        connection.execute(insert(_CALLBACKS), rows)
    return [row.created_at for row in moved]


def callback_values(
    entry: Any, stage: Stage, params: dict[str, str], *, now: float
) -> dict[str, Any] | None:
    """Column values of the ``callbacks`` row for ``stage`` of ``entry``, or ``None``.

    ``entry`` is anything with ``id``, ``callback_url`` and ``callback_stages`` (an
    ``EntryRow`` or a result row); ``None`` when it asked for no callback at this stage.
    Stage ``failed`` is never listed in ``callback_stages``: it is sent to every write
    that asked for at least one callback.
    """
    stages = entry.callback_stages or ()
    asked = bool(stages) if stage is Stage.FAILED else stage.value in stages
    if not entry.callback_url or not asked:
        return None
    return {
        "entry_id": entry.id,
        "stage": stage.value,
        "url": callback_target(entry.callback_url, {**params, "stage": stage.value}),
        "status": CallbackStatus.PENDING.value,
        "created_at": now,
        "next_attempt_at": now,
        "attempts": 0,
    }


@dataclass(frozen=True)
class _Due:
    id: int
    url: str
    created_at: float
    attempts: int

    @property
    def host(self) -> str:
        """``host:port`` of the receiver (the unit of the per-host limit)."""
        return urlsplit(self.url).netloc.lower()


class CallbackDispatcher:
    """Delivers due rows of the ``callbacks`` table (module docstring: slow receivers).

    Args:
        db: the API database.
        http: client used for the POSTs (its timeout applies); must be thread-safe
            (``httpx.Client`` is).
        secret: HMAC key of the signature header.
        policy: host policy checked before each POST.
        clock: time source.
        retry_base_s, retry_max_s: back-off after the n-th failure is
            ``min(retry_max_s, retry_base_s * 2**(n-1))`` seconds.
        give_up_s: a callback still undelivered this long after queuing is dropped.
        max_concurrency: POSTs in flight at once (threads of the pool).
        per_host: POSTs in flight at once to one receiver host.
        pass_budget_s: longest ``deliver_due`` waits for the POSTs it started, seconds.
    """

    def __init__(
        self,
        db: Database,
        http: httpx.Client,
        *,
        secret: bytes,
        policy: HostPolicy,
        clock: Clock,
        retry_base_s: float,
        retry_max_s: float,
        give_up_s: float,
        max_concurrency: int = 16,
        per_host: int = 4,
        pass_budget_s: float = 1.0,
    ) -> None:
        if max_concurrency < 1 or per_host < 1:
            raise ValueError("max_concurrency and per_host must be at least 1")
        self._db, self._http, self._secret = db, http, secret
        self._policy, self._clock = policy, clock
        self._retry_base_s, self._retry_max_s, self._give_up_s = (
            retry_base_s,
            retry_max_s,
            give_up_s,
        )
        self._max_concurrency, self._per_host = max_concurrency, per_host
        self._pass_budget_s = pass_budget_s
        self._pool: ThreadPoolExecutor | None = None  # made on first use
        self._lock = threading.Lock()
        self._in_flight: dict[int, str] = {}  # callback id -> host, POST under way

    def deliver_due(self, *, limit: int = 100) -> int:
        """Start the POSTs of due callbacks (oldest first, at most ``limit``) and wait for
        them up to ``pass_budget_s``.

        Returns:
            how many of the callbacks started here were delivered within that wait (those
            still in flight record their outcome when they finish).
        """
        futures = [self._start(due) for due in self._due(limit)]
        delivered = 0
        if futures:
            done, _ = wait(futures, timeout=self._pass_budget_s)
            delivered = sum(f.result() for f in done)
        if not self.in_flight():
            self.close()  # no thread is kept between passes that leave nothing in flight
        return delivered

    def in_flight(self) -> int:
        """Callbacks whose POST is under way now."""
        with self._lock:
            return len(self._in_flight)

    def close(self) -> None:
        """Wait for the POSTs in flight (each ends by the client's timeout) and release the
        threads. Call from the thread that calls ``deliver_due`` (it starts a new pool)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _start(self, due: _Due) -> Future[int]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                self._max_concurrency, thread_name_prefix="notary-api-callback"
            )
        return self._pool.submit(self._deliver_tracked, due)

    def _due(self, limit: int) -> list[_Due]:
        """Due rows not in flight, at most ``per_host`` in flight per host; marks them."""
        with self._lock:
            busy = dict(self._in_flight)
        now = self._clock.now()
        query = (
            select(CallbackRow)
            .where(CallbackRow.status == CallbackStatus.PENDING.value)
            .where(CallbackRow.next_attempt_at <= now)
            .order_by(CallbackRow.next_attempt_at, CallbackRow.id)
            # Room beyond ``limit``: rows of hosts at their in-flight cap are skipped, and
            # the next hosts' rows should not wait behind them.
            .limit(4 * limit + len(busy))
        )
        with self._db.read() as session:
            rows = session.scalars(query).all()
            candidates = [_Due(r.id, r.url, r.created_at, r.attempts) for r in rows]
        per_host = Counter(busy.values())
        chosen: list[_Due] = []
        for due in candidates:
            if len(chosen) >= limit:
                break
            if due.id in busy or per_host[due.host] >= self._per_host:
                continue  # the host's other callbacks wait for a later pass
            per_host[due.host] += 1
            chosen.append(due)
        with self._lock:
            self._in_flight.update((due.id, due.host) for due in chosen)
        return chosen

    def _deliver_tracked(self, due: _Due) -> int:
        try:
            return self._deliver(due)
        except Exception:  # a pool thread: log, the row stays pending for a later pass
            _log.exception("callback %s: delivery failed", due.id)
            return 0
        finally:
            with self._lock:
                self._in_flight.pop(due.id, None)

    def _deliver(self, due: _Due) -> int:
        now = self._clock.now()
        if now - due.created_at > self._give_up_s:
            self._finish(due, status=CallbackStatus.DROPPED, error="gave up: time limit reached")
            return 0
        refusal = self._policy.refusal_at_delivery(due.url)
        if refusal is not None:
            self._finish(due, status=CallbackStatus.DROPPED, error=f"refused: {refusal}")
            return 0
        error = self._post(due.url, timestamp=int(now))
        if error is None:
            self._finish(due, status=CallbackStatus.DELIVERED, error=None)
            return 1
        self._retry_later(due, error)
        return 0

    def _post(self, url: str, *, timestamp: int) -> str | None:
        headers = {
            "content-type": "application/json",
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: sign_callback(self._secret, timestamp=timestamp, url=url, body=_BODY),
        }
        try:
            response = self._http.post(url, content=_BODY, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        except RuntimeError as exc:  # the client was closed under us: the API is stopping
            return f"not sent: {exc}"
        return None if response.is_success else f"HTTP {response.status_code}"

    def _finish(self, due: _Due, *, status: CallbackStatus, error: str | None) -> None:
        with self._db.write() as session:
            row = session.get(CallbackRow, due.id)
            if row is None:
                return
            row.status = status.value
            row.attempts = due.attempts + (status is CallbackStatus.DELIVERED)
            row.last_error = error
            if status is CallbackStatus.DELIVERED:
                row.delivered_at = self._clock.now()
        if error:
            _log.warning("callback %s %s: %s", due.id, status.value, error)

    def _retry_later(self, due: _Due, error: str) -> None:
        attempts = due.attempts + 1
        delay = min(self._retry_max_s, self._retry_base_s * 2 ** (attempts - 1))
        with self._db.write() as session:
            row: Any = session.get(CallbackRow, due.id)
            if row is not None:
                row.attempts = attempts
                row.last_error = error
                row.next_attempt_at = self._clock.now() + delay
