"""The callback signature rule: known answer, tamper checks, and each step of the check."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from ledger.core.callback_signature import (
    MAX_SKEW_S,
    CallbackSignatureError,
    check_callback,
    sign_callback,
    verify_callback_signature,
)

SECRET = b"shared-secret"
URL = "http://127.0.0.1:8092/callbacks?entry_hash=ee&stage=ledger"
NOW = 1_700_000_000


def test_known_answer_of_the_signed_message_layout() -> None:
    message = b"1700000000\n" + URL.encode() + b"\n{}"
    expected = "sha256=" + hmac.new(SECRET, message, hashlib.sha256).hexdigest()
    assert sign_callback(SECRET, timestamp=NOW, url=URL, body=b"{}") == expected


@pytest.mark.parametrize(
    "changed",
    [
        {"timestamp": NOW + 1},
        {"url": URL + "x"},
        {"body": b"{} "},
    ],
)
def test_any_changed_field_breaks_the_signature(changed: dict[str, object]) -> None:
    signature = sign_callback(SECRET, timestamp=NOW, url=URL, body=b"{}")
    fields: dict[str, object] = {"timestamp": NOW, "url": URL, "body": b"{}"} | changed
    assert not verify_callback_signature(SECRET, signature=signature, **fields)  # type: ignore[arg-type]
    assert not verify_callback_signature(
        b"other", timestamp=NOW, url=URL, body=b"{}", signature=signature
    )


def _check(timestamp: str | None, signature: str | None, *, now: float = NOW) -> None:
    check_callback(
        SECRET, url=URL, body=b"{}", timestamp_header=timestamp, signature_header=signature, now=now
    )


def test_a_fresh_authentic_callback_passes_within_the_window() -> None:
    signature = sign_callback(SECRET, timestamp=NOW, url=URL, body=b"{}")
    _check(str(NOW), signature)
    _check(str(NOW), signature, now=NOW + MAX_SKEW_S)
    _check(str(NOW), signature, now=NOW - MAX_SKEW_S)


@pytest.mark.parametrize(
    ("timestamp", "signature", "now", "reason"),
    [
        (None, "sha256=00", NOW, "missing signature or timestamp"),
        (str(NOW), None, NOW, "missing signature or timestamp"),
        ("-5", "sha256=00", NOW, "missing signature or timestamp"),
        ("\u00b2", "sha256=00", NOW, "missing signature or timestamp"),
        (str(NOW), "sha256=00", NOW + MAX_SKEW_S + 1, "more than 300 s from now"),
        (str(NOW), "sha256=00", NOW, "bad signature"),
        (str(NOW), "sha256=\u00e9", NOW, "bad signature"),
    ],
)
def test_each_step_refuses_with_its_reason(
    timestamp: str | None, signature: str | None, now: float, reason: str
) -> None:
    with pytest.raises(CallbackSignatureError, match=reason) as refused:
        _check(timestamp, signature, now=now)
    assert reason in refused.value.reason
