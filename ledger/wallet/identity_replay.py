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

The replay itself is ``ledger.core.identity_keys`` (shared with the publishing API's
identity routes); this module gives it the wallet's error type.
"""

from __future__ import annotations

from collections.abc import Iterable

from ledger.core.entry import Entry
from ledger.core.errors import DecodeError
from ledger.core.identity_keys import active_keys, identity_key_history, initial_keys
from ledger.wallet.errors import NotAnIdentityError

__all__ = ["active_identity_keys", "initial_identity_keys"]


def initial_identity_keys(first: Entry) -> list[str]:
    """Initial keys (idpub strings, highest priority first) of an identity chain's first entry.

    Raises:
        NotAnIdentityError: wrong first ExtID, content not JSON with a non-empty ``keys``
            list of valid idpub strings, or a key listed twice.
    """
    try:
        return initial_keys(first)
    except DecodeError as exc:
        raise NotAnIdentityError(str(exc)) from exc


def active_identity_keys(chain_id: bytes, entries: Iterable[Entry]) -> list[str]:
    """Keys active after replaying ``entries`` (oldest first) of identity chain ``chain_id``.

    Returns [] when there are no entries (the chain did not exist yet at that height).

    Raises:
        NotAnIdentityError: the first entry is not an identity chain entry (rule 1).
    """
    try:
        return active_keys(identity_key_history(chain_id, entries))
    except DecodeError as exc:
        raise NotAnIdentityError(str(exc)) from exc
