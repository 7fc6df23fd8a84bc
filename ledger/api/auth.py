"""Request authentication without a database round trip per request, and rate limits.

``KeyCache`` remembers, for ``ttl_s`` seconds, which account a key (by its SHA-256) belongs
to. Only live accounts are cached, never unknown keys, so a new account works at once.
A revoked key keeps reading for at most ``ttl_s`` (default 1 s); it cannot write even
within that time, because every write checks the account inside its own transaction
(``intake.AccountRevoked``). The cache key is the SHA-256 of the presented key, the value
the database stores; the database look-up compares digests with ``hmac.compare_digest``
(``accounts.verify_key``). A dictionary look-up by digest reveals nothing useful about
other keys: an attacker cannot choose the digest of what they send.

``RateLimiter`` is a token bucket per account: ``rate_per_s`` tokens a second up to
``burst``; a request takes one token, and without one it is refused with the seconds to
wait (HTTP 429 with ``Retry-After``). The buckets live in the process (limits are per
API process).

Unknown keys are throttled per client address (``ledger.throttle.AuthFailureThrottle``,
docs/security.md): after ``auth_failure_burst`` of them, 429 with ``Retry-After``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ledger.api.accounts import hash_key, verify_key
from ledger.api.db import Database
from ledger.api.models import Account
from ledger.core.clock import Clock
from ledger.throttle import TokenBuckets

__all__ = ["KeyCache", "Principal", "RateLimiter"]


@dataclass(frozen=True)
class Principal:
    """The account a request acts for. Attributes: ``id``, ``name``."""

    id: int
    name: str


class KeyCache:
    """Key -> live account, cached for ``ttl_s`` seconds (module docstring).

    Args:
        db: the database holding the ``accounts`` table.
        clock: time source of the expiry.
        ttl_s: seconds a positive look-up is reused; 0 disables the cache.
        max_keys: most cached keys (least recently used dropped first).
        on_lookup: called with every live account row found in the database (the sandbox
            copies it into its own database with it).
    """

    def __init__(
        self,
        db: Database,
        *,
        clock: Clock,
        ttl_s: float = 1.0,
        max_keys: int = 10_000,
        on_lookup: Callable[[Account], None] | None = None,
    ) -> None:
        self._db, self._clock, self._ttl_s, self._max = db, clock, ttl_s, max_keys
        self._on_lookup = on_lookup
        self._entries: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, key: str) -> Principal | None:
        """The cached live account of ``key``, or ``None`` (unknown, expired or not cached)."""
        digest = hash_key(key)
        with self._lock:
            hit = self._entries.get(digest)
            if hit is None:
                return None
            if hit[1] <= self._clock.now():
                del self._entries[digest]
                return None
            self._entries.move_to_end(digest)
            return hit[0]

    def lookup(self, key: str) -> Principal | None:
        """The live account of ``key`` from the database (cached when found). Blocking."""
        with self._db.read() as session:
            account = verify_key(session, key)
            found = None if account is None else Principal(account.id, account.name)
        if account is not None and self._on_lookup is not None:
            self._on_lookup(account)
        if found is not None and self._ttl_s > 0:
            with self._lock:
                self._entries[hash_key(key)] = (found, self._clock.now() + self._ttl_s)
                self._entries.move_to_end(hash_key(key))
                while len(self._entries) > self._max:
                    self._entries.popitem(last=False)
        return found

    def forget_all(self) -> None:
        """Drop every cached key (the next request of each key reads the database)."""
        with self._lock:
            self._entries.clear()


class RateLimiter(TokenBuckets[int]):
    """Token bucket per account id (module docstring; ``ledger.throttle.TokenBuckets``).

    Args:
        clock: time source.
        rate_per_s: tokens added per second; 0 means no limit.
        burst: bucket size (most requests at once after a quiet period).
    """

    def __init__(self, *, clock: Clock, rate_per_s: float, burst: int) -> None:
        super().__init__(clock=clock, rate_per_s=rate_per_s, burst=burst)
