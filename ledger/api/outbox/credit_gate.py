"""Whether the API's entry credit address can pay: hold writes while it cannot.

Every chain and entry the API publishes is paid by one entry credit address
(``NOTARY_API_EC_ADDRESS``); the node refuses a commit the balance does not cover
(docs/formats.md §2.4, commit rule 5; ``ledger.api.outbox.refusals``, kind ``unfunded``).
``CreditGate`` is the worker's memory of that address:

* **funded** (the start): writes are composed and committed as they come. The balance is
  looked up every ``check_interval_s`` for the status (``ledger.api.outbox.credit_status``).
* **dry**: entered when the node refuses a commit as under-funded, or when a look-up finds
  a balance below the cost of the oldest write waiting for its commit. New commits are
  held (the rows stay at ``multi_az`` and keep their attempts); reveals of writes already
  committed (paid) still go. The balance is looked up again after ``retry_base_s``, then
  after twice as long each time it still does not pay, at most every ``retry_max_s``.
* back to **funded** once a look-up finds a balance that pays for the oldest waiting
  write: committing resumes, oldest first, by itself. A balance that pays for only part
  of the queue is spent, and the gate is dry again at the next refusal.

Each change is logged once (WARNING when it runs dry, INFO when funded again), never per
write. Every decision reads the injected clock; the gate does no I/O itself (the worker
asks the node for the balance when ``check_due``), so tests drive it with a manual clock.
Thread-safe: the worker changes it, status readers take ``snapshot()``s.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from ledger.core.clock import Clock

__all__ = ["CreditGate", "GateState"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateState:
    """A consistent copy of the gate.

    Attributes:
        ec_address: the paying address (``EC...``).
        funded: False while writes are held for credits.
        balance_ec: the last balance seen (a look-up or a refusal), credits; ``None``
            before the first.
        checked_at: Unix seconds of that observation; ``None`` before it.
        dry_since: Unix seconds when the address ran dry; ``None`` while funded.
        next_check_at: Unix seconds when the balance is looked up next.
    """

    ec_address: str
    funded: bool
    balance_ec: int | None
    checked_at: float | None
    dry_since: float | None
    next_check_at: float


class CreditGate:
    """Funded / dry state of the paying address (module docstring).

    Args:
        ec_address: the paying address, for the log lines and the status.
        clock: time source (Unix seconds).
        check_interval_s: look-up period while funded, seconds (> 0).
        retry_base_s: first look-up delay once dry, seconds (> 0); doubles each time.
        retry_max_s: longest delay between look-ups while dry, seconds (>= retry_base_s).

    Raises:
        ValueError: a delay out of range.
    """

    def __init__(
        self,
        ec_address: str,
        *,
        clock: Clock,
        check_interval_s: float,
        retry_base_s: float,
        retry_max_s: float,
    ) -> None:
        if check_interval_s <= 0 or retry_base_s <= 0 or retry_max_s < retry_base_s:
            raise ValueError("credit look-up delays must be > 0, with retry_max_s >= base")
        self._address, self._clock = ec_address, clock
        self._interval_s, self._base_s, self._max_s = check_interval_s, retry_base_s, retry_max_s
        self._lock = threading.Lock()
        self._funded = True
        self._balance: int | None = None
        self._checked_at: float | None = None
        self._dry_since: float | None = None
        self._delay_s = retry_base_s
        self._next_check = clock.now()  # the first pass looks the balance up

    @property
    def funded(self) -> bool:
        """False while commits are held."""
        with self._lock:
            return self._funded

    def check_due(self) -> bool:
        """Whether the worker should look the balance up now (``observe`` the answer)."""
        with self._lock:
            return self._clock.now() >= self._next_check

    def refused(self, *, balance_ec: int | None) -> None:
        """The node refused a commit as under-funded (``balance_ec``: the balance it gave)."""
        now = self._clock.now()
        with self._lock:
            self._balance, self._checked_at = balance_ec, now
            if self._funded:  # also when a look-up said it pays and the node says not
                self._run_dry(now)

    def observe(self, balance_ec: int, *, needed_ec: int) -> bool:
        """Record a look-up: ``balance_ec`` against ``needed_ec``, the credits of the oldest
        write waiting for its commit (1 when none waits). Returns ``funded`` afterwards."""
        now = self._clock.now()
        with self._lock:
            self._balance, self._checked_at = balance_ec, now
            pays = balance_ec >= max(1, needed_ec)
            if self._funded and not pays:
                self._run_dry(now)
            elif self._funded:
                self._next_check = now + self._interval_s
            elif pays:
                self._fund(now)
            else:
                self._schedule_retry(now)
            return self._funded

    def lookup_failed(self) -> None:
        """The balance could not be looked up: nothing changes, the next look-up comes
        after the back-off delay (a failing look-up never holds writes by itself)."""
        with self._lock:
            self._schedule_retry(self._clock.now())

    def snapshot(self) -> GateState:
        """The gate's state now (for ``ledger.api.outbox.credit_status``)."""
        with self._lock:
            return GateState(
                ec_address=self._address,
                funded=self._funded,
                balance_ec=self._balance,
                checked_at=self._checked_at,
                dry_since=self._dry_since,
                next_check_at=self._next_check,
            )

    # -- transitions (lock held) ----------------------------------------------------------

    def _run_dry(self, now: float) -> None:
        self._funded, self._dry_since = False, now
        self._delay_s = self._base_s
        self._schedule_retry(now)
        _log.warning(
            "entry credit address %s ran dry (balance %s credits): accepted writes are held "
            "at multi_az until it is funded again",
            self._address,
            "unknown" if self._balance is None else self._balance,
        )

    def _fund(self, now: float) -> None:
        dry_for = now - (self._dry_since if self._dry_since is not None else now)
        self._funded, self._dry_since = True, None
        self._next_check = now + self._interval_s
        _log.info(
            "entry credit address %s funded again (balance %s credits) after %.1f s dry: "
            "held writes are being committed",
            self._address,
            self._balance,
            dry_for,
        )

    def _schedule_retry(self, now: float) -> None:
        self._next_check = now + self._delay_s
        self._delay_s = min(self._max_s, self._delay_s * 2)
