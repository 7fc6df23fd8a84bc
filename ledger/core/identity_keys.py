"""Key history of an application identity chain (formats section 8.1): pure replay.

``identity_key_history(chain_id, entries)`` takes the chain's entries oldest first and
returns every key the identity ever had, each with the position (0-based index in
``entries``) of the entry that activated it and of the one that retired it. Rules:

1. The first entry must be an identity chain entry: ExtID[0] = "IdentityChain" and content
   JSON ``{"keys": [idpub...], ...}`` with at least one key, all valid and distinct; these
   keys, highest priority first (priority 0 is the master key), are active from entry 0.
2. Every later entry with exactly five ExtIDs ``["ReplaceKey", old idpub, new idpub,
   signature (64 bytes), signer idpub]`` replaces ``old`` by ``new`` when

   a. ``old`` is active (at priority level L);
   b. ``new`` has never been a key of this identity;
   c. ``signer`` is active at a level <= L (same or higher priority);
   d. the signature verifies (canonically) over the ASCII text
      ``chain ID hex || old idpub || new idpub`` with the signer's key.

   ``new`` then holds level L. Any other entry (attributes, endorsements, malformed or
   refused replacements) changes nothing, as the Go client's ``GetKeysAtHeight`` does.

``check_replacement`` applies rules a to d to one proposed replacement without an entry
(the publishing API checks a replacement before accepting it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ledger.core.addresses import public_key_from_identity
from ledger.core.entry import Entry
from ledger.core.errors import AddressError, DecodeError
from ledger.core.keys import verify_signature

__all__ = [
    "IDENTITY_CHAIN_TAG",
    "REPLACE_KEY_TAG",
    "KeyTenure",
    "Replacement",
    "active_keys",
    "check_replacement",
    "identity_first_entry",
    "identity_key_history",
    "initial_keys",
    "parse_replacement",
    "replacement_entry",
]

IDENTITY_CHAIN_TAG = b"IdentityChain"
REPLACE_KEY_TAG = b"ReplaceKey"
_SIGNATURE_BYTES = 64


@dataclass(frozen=True)
class KeyTenure:
    """One key of an identity and when it held its place.

    Attributes:
        key: the idpub string.
        priority: its level, 0 = highest (the master key).
        activated_by: index of the entry that made it active (0 for the initial keys).
        retired_by: index of the entry that replaced it, ``None`` while still active.
    """

    key: str
    priority: int
    activated_by: int
    retired_by: int | None = None


@dataclass(frozen=True)
class Replacement:
    """A proposed key replacement: ``old`` by ``new``, signed by ``signer``."""

    old: str
    new: str
    signature: bytes
    signer: str

    def message(self, chain_id: bytes) -> bytes:
        """The signed text: ``chain ID hex || old || new`` as ASCII."""
        return (chain_id.hex() + self.old + self.new).encode("ascii")


def identity_first_entry(names: Sequence[bytes], keys: Sequence[str]) -> Entry:
    """The first entry of an identity chain: ExtIDs ``["IdentityChain", *names]``.

    Its content is ``{"keys":[...],"version":1}`` (compact, keys sorted, as Go's
    ``json.Marshal`` of a map writes it).

    Raises:
        DecodeError: no key, a key twice, or a key that is not a valid idpub string.
    """
    _check_keys(list(keys))
    content = json.dumps({"keys": list(keys), "version": 1}, separators=(",", ":"))
    return Entry.first_entry([IDENTITY_CHAIN_TAG, *names], content.encode("ascii"))


def replacement_entry(chain_id: bytes, replacement: Replacement) -> Entry:
    """The ``ReplaceKey`` entry of ``replacement`` in identity chain ``chain_id``."""
    r = replacement
    ext_ids = (REPLACE_KEY_TAG, r.old.encode(), r.new.encode(), r.signature, r.signer.encode())
    return Entry(chain_id, ext_ids, b"")


def initial_keys(first: Entry) -> list[str]:
    """Initial keys (idpub strings, highest priority first) of an identity's first entry.

    Raises:
        DecodeError: wrong first ExtID, or content not JSON with a non-empty ``keys`` list
            of valid, distinct idpub strings.
    """
    if not first.external_ids or first.external_ids[0] != IDENTITY_CHAIN_TAG:
        raise DecodeError("the chain is not an identity chain (first ExtID)")
    try:
        keys = json.loads(first.content)["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DecodeError("the identity chain's first entry holds no keys") from exc
    if not isinstance(keys, list):
        raise DecodeError("the identity chain's keys are not a list")
    _check_keys(keys)
    return list(keys)


def _check_keys(keys: list[object]) -> None:
    if not keys or len(set(map(str, keys))) != len(keys):
        raise DecodeError("an identity needs at least one key, each listed once")
    for key in keys:
        if not isinstance(key, str):
            raise DecodeError("identity keys must be idpub strings")
        try:
            public_key_from_identity(key)
        except AddressError as exc:
            raise DecodeError(f"not a valid identity public key: {key[:60]!r}") from exc


def identity_key_history(chain_id: bytes, entries: Iterable[Entry]) -> list[KeyTenure]:
    """Every key of the identity, in the order it was added (module docstring).

    Returns [] when there are no entries.

    Raises:
        DecodeError: the first entry is not an identity chain entry (rule 1).
    """
    iterator = iter(entries)
    first = next(iterator, None)
    if first is None:
        return []
    history = [KeyTenure(key, level, 0) for level, key in enumerate(initial_keys(first))]
    for index, entry in enumerate(iterator, start=1):
        proposed = parse_replacement(entry.external_ids)
        if proposed is not None and check_replacement(chain_id, history, proposed) is None:
            _apply(history, proposed, index)
    return history


def active_keys(history: Sequence[KeyTenure]) -> list[str]:
    """The active keys of ``history``, highest priority first."""
    live = [t for t in history if t.retired_by is None]
    return [t.key for t in sorted(live, key=lambda t: t.priority)]


def check_replacement(
    chain_id: bytes, history: Sequence[KeyTenure], proposed: Replacement
) -> str | None:
    """Why ``proposed`` would be refused after ``history`` (rules a to d), else ``None``."""
    live = {t.key: t.priority for t in history if t.retired_by is None}
    if proposed.old not in live:
        return "the old key is not an active key of this identity"
    if any(t.key == proposed.new for t in history):
        return "the new key has already been a key of this identity"
    if proposed.signer not in live:
        return "the signer key is not an active key of this identity"
    if live[proposed.signer] > live[proposed.old]:
        return "the signer key has a lower priority than the old key"
    try:
        signer = public_key_from_identity(proposed.signer)
        public_key_from_identity(proposed.new)
    except AddressError:
        return "a key is not a valid identity public key"
    if len(proposed.signature) != _SIGNATURE_BYTES or not verify_signature(
        signer, proposed.message(chain_id), proposed.signature
    ):
        return "the signature does not verify with the signer key"
    return None


def parse_replacement(ext_ids: Sequence[bytes]) -> Replacement | None:
    """The replacement an entry's ExtIDs propose (five, ``ReplaceKey`` first), else None."""
    if len(ext_ids) != 5 or ext_ids[0] != REPLACE_KEY_TAG:
        return None
    try:
        old, new, signer = (ext_ids[i].decode("ascii") for i in (1, 2, 4))
    except UnicodeDecodeError:
        return None
    return Replacement(old, new, ext_ids[3], signer)


def _apply(history: list[KeyTenure], proposed: Replacement, index: int) -> None:
    position = next(
        i for i, t in enumerate(history) if t.key == proposed.old and t.retired_by is None
    )
    retired = history[position]
    history[position] = replace(retired, retired_by=index)
    history.append(KeyTenure(proposed.new, retired.priority, index))
