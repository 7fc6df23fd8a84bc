"""The canonical form of a proof bundle's JSON, field by field (docs/proof-bundle.md):
exact keys (none unknown, none missing, none twice), lower-case hex without ``0x`` (the
contract address with it), integers that are JSON integers. Every refusal is a
``ProofError`` at step 0 (``Step.FORMAT``); ``ledger.core.proof.bundle`` reads each part
of a bundle with these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.core.errors import DecodeError
from ledger.core.hexbytes import from_hex, from_hex_list
from ledger.core.proof.steps import ProofError, Step

__all__ = [
    "address_field",
    "exact_keys",
    "format_error",
    "hex_field",
    "hex_list_field",
    "json_object",
    "no_constant",
    "text_field",
    "uint_field",
    "unique_keys",
]


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` object hook: a key twice is refused (which one counts differs)."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise format_error(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def no_constant(name: str) -> Any:
    """``json.loads`` ``parse_constant`` hook: ``NaN`` and ``Infinity`` are refused."""
    raise format_error(f"{name} is not a JSON number")


def exact_keys(obj: Mapping[str, Any], what: str, keys: frozenset[str] | set[str]) -> None:
    """Exactly ``keys``: an unknown key or a missing one is refused."""
    unknown = sorted(set(obj) - keys)
    if unknown:
        raise format_error(f"{what} has unknown keys: {', '.join(unknown)}")
    missing = sorted(keys - set(obj))
    if missing:
        raise format_error(f"{what} lacks keys: {', '.join(missing)}")


def format_error(what: str) -> ProofError:
    """The error of a bundle that is not in the canonical form (step 0, ``Step.FORMAT``)."""
    return ProofError(Step.FORMAT, what)


def json_object(
    value: Any, what: str, keys: frozenset[str] | set[str] | None = None
) -> Mapping[str, Any]:
    """``value`` as a JSON object, with exactly ``keys`` when they are given."""
    if not isinstance(value, Mapping):
        raise format_error(f"{what} must be a JSON object")
    if keys is not None:
        exact_keys(value, what, keys)
    return value


def hex_field(obj: Mapping[str, Any], key: str) -> bytes:
    """Canonical hex: lower case, no ``0x``."""
    try:
        return from_hex(obj.get(key), key, lowercase=True)
    except DecodeError as exc:
        raise format_error(str(exc)) from exc


def address_field(obj: Mapping[str, Any], key: str) -> bytes:
    """The contract address: ``0x`` and lower-case hex, as docs/proof-bundle.md writes it."""
    value = obj.get(key)
    if not isinstance(value, str) or not value.startswith("0x"):
        raise format_error(f"{key} must be 0x and lowercase hex")
    try:
        return from_hex(value[2:], key, lowercase=True)
    except DecodeError as exc:
        raise format_error(str(exc)) from exc


def uint_field(obj: Mapping[str, Any], key: str) -> int:
    """A non-negative JSON integer (``true``, ``1.0`` and ``"1"`` are refused)."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise format_error(f"{key} must be a non-negative integer")
    return value


def text_field(obj: Mapping[str, Any], key: str) -> str:
    """A JSON string."""
    value = obj.get(key)
    if not isinstance(value, str):
        raise format_error(f"{key} must be a string")
    return value


def hex_list_field(value: Any, what: str) -> tuple[bytes, ...]:
    """A list of canonical hex strings, as bytes."""
    try:
        return from_hex_list(value, what, lowercase=True)
    except DecodeError as exc:
        raise format_error(str(exc)) from exc
