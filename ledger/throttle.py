"""Token buckets, and the throttle of failed authentications per client address.

``TokenBuckets`` is one token bucket per key: ``rate_per_s`` tokens a second up to
``burst``; ``take`` spends one, or says how many seconds until one is there. The
publishing API's per-account rate limit (``ledger.api.auth.RateLimiter``) and the
throttle below are both built on it. At most ``max_keys`` buckets are kept (least
recently used dropped first: a dropped bucket starts full again), so a flood from many
addresses cannot grow memory without bound.

``AuthFailureThrottle`` (docs/security.md): every failed authentication (a JSON-RPC
request without the right basic credentials, an unknown API key) spends a token of its
client address's bucket (``burst`` failures at once, then ``rate_per_s`` a second). While
an address's bucket is empty, every request of that address that needs credentials is
answered HTTP 429 with ``Retry-After`` (whole seconds, rounded up; RFC 9110 §10.2.3)
before its credentials are even compared, the right ones included, so guessing goes no
faster than ``rate_per_s``. Refusals are logged as one WARNING line per ``log_interval_s``
summarising them (how many, how many throttled, the busiest addresses), never one line
per attempt: the first refusal after a quiet interval is logged at once, the following
ones in the next summary.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

from ledger.core.clock import Clock

__all__ = ["AuthFailureThrottle", "TokenBuckets", "retry_after_header"]

K = TypeVar("K", bound=Hashable)

_SHOWN_ADDRESSES = 3  # addresses named in one summary line


class TokenBuckets(Generic[K]):
    """One token bucket per key (module docstring); thread-safe.

    Args:
        clock: time source (seconds).
        rate_per_s: tokens added per second; 0 means no limit (``take`` always allows).
        burst: bucket size (most takes at once after a quiet period); at least 1.
        max_keys: most buckets kept (least recently used dropped first).
    """

    def __init__(
        self, *, clock: Clock, rate_per_s: float, burst: int, max_keys: int = 100_000
    ) -> None:
        if burst < 1 or rate_per_s < 0 or max_keys < 1:
            raise ValueError("burst and max_keys must be at least 1, rate_per_s not negative")
        self._clock, self._rate, self._burst, self._max = clock, rate_per_s, float(burst), max_keys
        self._buckets: OrderedDict[K, tuple[float, float]] = OrderedDict()  # tokens, at
        self._lock = threading.Lock()

    def take(self, key: K) -> float | None:
        """Spend one token of ``key``: ``None`` when there was one, else the seconds until
        one is available (nothing spent)."""
        return self._use(key, spend=True)

    def wait_s(self, key: K) -> float | None:
        """``None`` when ``key`` has a token, else the seconds until it has one (nothing
        spent)."""
        return self._use(key, spend=False)

    def _use(self, key: K, *, spend: bool) -> float | None:
        if self._rate <= 0:
            return None
        now = self._clock.now()
        with self._lock:
            tokens, updated = self._buckets.get(key, (self._burst, now))
            tokens = min(self._burst, tokens + max(0.0, now - updated) * self._rate)
            wait = None if tokens >= 1.0 else (1.0 - tokens) / self._rate
            if spend and wait is None:
                tokens -= 1.0
            if tokens >= self._burst:
                self._buckets.pop(key, None)  # a full bucket is the default: keep nothing
            else:
                self._buckets[key] = (tokens, now)
                self._buckets.move_to_end(key)
                while len(self._buckets) > self._max:
                    self._buckets.popitem(last=False)
            return wait


def retry_after_header(wait_s: float) -> str:
    """The ``Retry-After`` value of a wait: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(wait_s)))


class AuthFailureThrottle:
    """Failed authentications per client address: throttled, and logged in summary.

    Args:
        what: what is guarded, for the log line (``"the node's JSON-RPC"``).
        clock: time source (seconds).
        logger: where the summary lines go (WARNING).
        burst: failures an address may make at once.
        rate_per_s: failures an address may make per second after that.
        log_interval_s: seconds between two summary lines.
    """

    def __init__(
        self,
        what: str,
        *,
        clock: Clock,
        logger: logging.Logger,
        burst: int = 10,
        rate_per_s: float = 1.0,
        log_interval_s: float = 60.0,
    ) -> None:
        self.what = what
        self._clock, self._log, self._interval = clock, logger, log_interval_s
        self._buckets: TokenBuckets[str] = TokenBuckets(
            clock=clock, rate_per_s=rate_per_s, burst=burst
        )
        self._lock = threading.Lock()
        self._refused: Counter[str] = Counter()
        self._throttled = 0
        self._since: float | None = None
        self._last_line = -math.inf

    def retry_after(self, client: str | None) -> float | None:
        """``None`` when ``client`` may try its credentials, else the seconds to wait (the
        request is then refused 429 and counted in the summary)."""
        wait = self._buckets.wait_s(_address(client))
        if wait is not None:
            self._note(client, throttled=True)
        return wait

    def failed(self, client: str | None) -> None:
        """Record a failed authentication of ``client`` (spends a token of its bucket)."""
        self._buckets.take(_address(client))
        self._note(client, throttled=False)

    def _note(self, client: str | None, *, throttled: bool) -> None:
        now = self._clock.now()
        with self._lock:
            self._refused[_address(client)] += 1
            self._throttled += int(throttled)
            if self._since is None:
                self._since = now
            if now - self._last_line < self._interval:
                return
            line = self._summary(now)
            self._last_line = now
        self._log.warning("%s", line)

    def _summary(self, now: float) -> str:
        """The summary of the refusals counted so far, which are then reset."""
        total, addresses = sum(self._refused.values()), len(self._refused)
        busiest = ", ".join(f"{a} ({n})" for a, n in self._refused.most_common(_SHOWN_ADDRESSES))
        more = "" if addresses <= _SHOWN_ADDRESSES else f" and {addresses - _SHOWN_ADDRESSES} more"
        seconds = now - (self._since if self._since is not None else now)
        line = (
            f"refused {_count(total, 'request')} to {self.what} without valid credentials "
            f"in {seconds:.0f} s ({self._throttled} of them throttled, 429) from "
            f"{_count(addresses, 'address')}: {busiest}{more}"
        )
        self._refused.clear()
        self._throttled, self._since = 0, None
        return line


def _count(n: int, noun: str) -> str:
    """``1 request``, ``2 requests``, ``2 addresses``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}{'es' if noun.endswith('s') else 's'}"


def _address(client: str | None) -> str:
    return client or "unknown"
