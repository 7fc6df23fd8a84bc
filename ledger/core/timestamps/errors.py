"""The error of timestamp verification: one exception with the failed check's number.

``TimestampError`` is a ``LedgerFormatError`` (``ledger.core.errors``): a token that does
not prove its root is untrusted data, like a proof bundle that does not hold. Its
``check`` names which of ``Check``'s numbered checks failed
(``ledger.core.timestamps.rfc3161.verify_token`` lists them); ``TimestampRejected`` is
the one raised for a response whose status is not ``granted`` (RFC 3161 section 2.4.2).
``OtsError`` is an OpenTimestamps file that does not parse or does not stamp its root
(``ledger.core.timestamps.ots``)::

    LedgerFormatError
    ├── TimestampError
    │   └── TimestampRejected
    └── OtsError
"""

from __future__ import annotations

from enum import IntEnum

from ledger.core.errors import LedgerFormatError

__all__ = ["Check", "OtsError", "TimestampError", "TimestampRejected"]


class Check(IntEnum):
    """The numbered checks of an RFC 3161 token (``rfc3161.verify_token``)."""

    FORMAT = 1
    STATUS = 2
    IMPRINT = 3
    NONCE = 4
    SIGNER = 5
    SIGNED_ATTRIBUTES = 6
    SIGNATURE = 7
    KEY_USAGE = 8
    CHAIN = 9

    @property
    def title(self) -> str:
        """Short human name of the check."""
        return self.name.lower().replace("_", " ")


class TimestampError(LedgerFormatError):
    """A time-stamp response or token that does not prove its root.

    The message is ``"check N (title): reason"``.

    Attributes:
        check: the failed ``Check``.
        reason: the message without the check prefix.
    """

    def __init__(self, check: Check, reason: str) -> None:
        super().__init__(f"check {int(check)} ({check.title}): {reason}")
        self.check = check
        self.reason = reason


class TimestampRejected(TimestampError):
    """A response whose status is neither ``granted`` nor ``grantedWithMods``.

    Attributes:
        status: the PKIStatus name (``rejection``, ``waiting``, ...).
    """

    def __init__(self, status: str, text: str) -> None:
        super().__init__(Check.STATUS, f"the authority answered {status}: {text or 'no text'}")
        self.status = status


class OtsError(LedgerFormatError):
    """An OpenTimestamps file or header that does not hold (``ledger.core.timestamps.ots``).

    Attributes:
        reason: the message, one sentence.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
