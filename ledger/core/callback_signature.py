"""The HMAC signature of the publishing API's status callbacks: one rule for both ends.

The sender (``ledger.api.outbox.callbacks``) signs every callback POST and the pipeline's receiver
(``connectors.callback_receiver``) checks it with these functions; both sides share the
secret (``NOTARY_API_CALLBACK_SECRET`` / ``NOTARY_CALLBACK_SECRET``). Pure: no I/O, the
time is passed in.

Headers of a signed POST::

    X-Notary-Timestamp: <Unix time in whole seconds, ASCII decimal digits>
    X-Notary-Signature: sha256=<64 lowercase hex digits>

Signed message (bytes), with ``\\n`` a single line feed::

    <timestamp as in the header> \\n <URL> \\n <body>

where ``URL`` is the exact URL posted to, query string included (the receiver rebuilds it
from the callback URL it handed out plus the raw query string, not from a ``Host`` header a
proxy may rewrite), and ``body`` is the raw request body (``{}`` for the API's callbacks).
The signature is HMAC-SHA256 (RFC 2104, FIPS 180-4) of that message under the secret,
rendered ``"sha256=" + hexdigest``; it is compared in constant time.

Timestamp window: a receiver refuses a timestamp more than ``MAX_SKEW_S`` seconds (300 by
default) before or after its own clock, so a captured callback cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac

from ledger.core.errors import LedgerFormatError

__all__ = [
    "MAX_SKEW_S",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "CallbackSignatureError",
    "check_callback",
    "sign_callback",
    "verify_callback_signature",
]

SIGNATURE_HEADER = "X-Notary-Signature"
TIMESTAMP_HEADER = "X-Notary-Timestamp"
#: Default largest distance, seconds, between a callback's timestamp and the receiver's clock.
MAX_SKEW_S = 300.0
_PREFIX = "sha256="


class CallbackSignatureError(LedgerFormatError):
    """A callback that is not fresh and authentic.

    Attributes:
        reason: why, without any secret (``"missing signature or timestamp"``,
            ``"timestamp ... is more than ... s from now"``, ``"bad signature"``).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def sign_callback(secret: bytes, *, timestamp: int, url: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 over ``f"{timestamp}\\n{url}\\n".encode() + body``.

    Args:
        secret: the shared HMAC key, raw bytes.
        timestamp: Unix time in whole seconds, as sent in ``X-Notary-Timestamp``.
        url: the exact URL posted to (UTF-8 encoded into the message).
        body: the raw request body.
    """
    message = f"{timestamp}\n{url}\n".encode() + body
    return _PREFIX + hmac.new(secret, message, hashlib.sha256).hexdigest()


def verify_callback_signature(
    secret: bytes, *, timestamp: int, url: str, body: bytes, signature: str
) -> bool:
    """True when ``signature`` is ``sign_callback(...)`` of these values (constant time).

    The timestamp window is not checked here; ``check_callback`` checks both.
    """
    expected = sign_callback(secret, timestamp=timestamp, url=url, body=body)
    return hmac.compare_digest(expected.encode(), signature.encode())


def check_callback(
    secret: bytes,
    *,
    url: str,
    body: bytes,
    timestamp_header: str | None,
    signature_header: str | None,
    now: float,
    max_skew_s: float = MAX_SKEW_S,
) -> None:
    """Check a received callback's headers; returns None when it is fresh and authentic.

    Steps: (1) both headers present, the timestamp decimal digits only; (2) the timestamp
    within ``max_skew_s`` seconds of ``now``; (3) the signature matches.

    Args:
        url: the URL the callback was posted to, rebuilt by the receiver (module doc).
        body: the raw request body.
        timestamp_header, signature_header: the header values, ``None`` when absent.
        now: the receiver's time, Unix seconds.
        max_skew_s: the timestamp window, seconds.

    Raises:
        CallbackSignatureError: the first step that fails, with its reason.
    """
    stamp = timestamp_header or ""
    if not signature_header or not (stamp.isascii() and stamp.isdigit()):
        raise CallbackSignatureError("missing signature or timestamp")
    timestamp = int(stamp)
    if abs(now - timestamp) > max_skew_s:
        raise CallbackSignatureError(
            f"timestamp {timestamp} is more than {max_skew_s:.0f} s from now"
        )
    if not verify_callback_signature(
        secret, timestamp=timestamp, url=url, body=body, signature=signature_header
    ):
        raise CallbackSignatureError("bad signature")
