"""Active keys of an application identity: replay of its chain (docs/formats.md §8.1).

Pure: ``active_identity_keys(chain_id, entries)`` takes the chain's entries oldest first
(those of blocks up to the height wanted) and applies, in order:

1. The first entry must be an identity chain entry: ExtID[0] = "IdentityChain" and content
   JSON ``{"keys": [idpub...], ...}`` with at least one valid key; these keys, highest
   priority first, are the initial set (and count as used).
2. Every later entry with exactly five ExtIDs ``["ReplaceKey", old idpub, new idpub,
   signature (64 bytes), signer idpub]`` replaces ``old`` by ``new`` when

   a. ``old`` is in the active set (at priority level L, 0 = highest);
   b. ``new`` has never been an identity key of this chain;
   c. ``signer`` is in the active set at a level <= L (same or higher priority);
   d. the signature verifies (canonically) over the ASCII text
      ``chain ID hex || old idpub || new idpub`` with the signer's key.

   Any other entry (attributes, endorsements, malformed replacements) is skipped, as the
   Go client's ``GetKeysAtHeight`` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ledger.core.addresses import public_key_from_identity
from ledger.core.entry import Entry
from ledger.core.errors import AddressError
from ledger.core.keys import verify_signature
from ledger.wallet.errors import NotAnIdentityError

__all__ = ["active_identity_keys", "initial_identity_keys"]

_IDENTITY_CHAIN = b"IdentityChain"
_REPLACE_KEY = b"ReplaceKey"
_SIGNATURE_BYTES = 64


def initial_identity_keys(first: Entry) -> list[str]:
    """Initial keys (idpub strings, highest priority first) of an identity chain's first entry.

    Raises:
        NotAnIdentityError: wrong first ExtID, content not JSON with a non-empty ``keys``
            list of valid idpub strings, or a key listed twice.
    """
    if not first.external_ids or first.external_ids[0] != _IDENTITY_CHAIN:
        raise NotAnIdentityError("the chain is not an identity chain (first ExtID)")
    try:
        keys = json.loads(first.content)["keys"]
        if not isinstance(keys, list) or not keys or len(set(keys)) != len(keys):
            raise ValueError("keys must be a non-empty list of distinct keys")
        for key in keys:
            public_key_from_identity(key)
    except (ValueError, KeyError, TypeError, AddressError) as exc:
        raise NotAnIdentityError("the identity chain's first entry holds no valid keys") from exc
    return list(keys)


def active_identity_keys(chain_id: bytes, entries: Iterable[Entry]) -> list[str]:
    """Keys active after replaying ``entries`` (oldest first) of identity chain ``chain_id``.

    Returns [] when there are no entries (the chain did not exist yet at that height).

    Raises:
        NotAnIdentityError: the first entry is not an identity chain entry (rule 1).
    """
    iterator = iter(entries)
    first = next(iterator, None)
    if first is None:
        return []
    keys = initial_identity_keys(first)
    used = set(keys)
    chain_hex = chain_id.hex()
    for entry in iterator:
        replacement = _replacement(entry.external_ids)
        if replacement is not None:
            _apply(keys, used, replacement, chain_hex=chain_hex)
    return keys


def _replacement(ext_ids: Sequence[bytes]) -> tuple[str, str, bytes, str] | None:
    """``(old, new, signature, signer)`` of a well-formed ReplaceKey entry, else None."""
    if len(ext_ids) != 5 or ext_ids[0] != _REPLACE_KEY or len(ext_ids[3]) != _SIGNATURE_BYTES:
        return None
    try:
        old, new, signer = (ext_ids[i].decode("ascii") for i in (1, 2, 4))
        for key in (old, new, signer):
            public_key_from_identity(key)
    except (UnicodeDecodeError, AddressError):
        return None
    return old, new, ext_ids[3], signer


def _apply(
    keys: list[str], used: set[str], replacement: tuple[str, str, bytes, str], *, chain_hex: str
) -> None:
    old, new, signature, signer = replacement
    if old not in keys or new in used or signer not in keys:  # rules a, b
        return
    level = keys.index(old)
    if keys.index(signer) > level:  # rule c: the signer must rank at least as high
        return
    message = (chain_hex + old + new).encode("ascii")
    if not verify_signature(public_key_from_identity(signer), message, signature):  # rule d
        return
    keys[level] = new
    used.add(new)
