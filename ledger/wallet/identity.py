"""Application-identity entries built by walletd's ``compose-identity-*`` (docs/formats.md §8.1).

Pure builders of ``Entry`` values; the signed messages are ASCII texts (hex chain IDs,
idpub strings) except the attribute hash, which is raw SHA-256 bytes:

| entry | chain | ExtIDs | content | signed message |
|---|---|---|---|---|
| identity chain (first entry) | ChainID(ExtIDs) | "IdentityChain", name... | ``{"keys":[idpub...],"version":1}`` | - |
| key replacement | identity chain | "ReplaceKey", old idpub, new idpub, sig, signer idpub | empty | chainhex+old+new |
| attribute | destination | "IdentityAttribute", receiver hex, sig, signer idpub, signer chain hex | JSON ``[{"key","value"}]`` | receiverhex+desthex+SHA256(content) |
| endorsement | destination | "IdentityAttributeEndorsement", sig, signer idpub, signer chain hex | attribute entry hash hex | desthex+entryhashhex |

Chain IDs and entry hashes are taken as 64-hex text and used in lower case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.core.addresses import identity_public_key, public_key_from_identity
from ledger.core.entry import Entry
from ledger.core.errors import AddressError
from ledger.core.hashing import sha256
from ledger.core.hexbytes import from_hex, to_hex
from ledger.core.keys import SigningKey
from ledger.wallet.gojson import go_json_dumps

__all__ = [
    "attribute_endorsement_entry",
    "attribute_entry",
    "attributes_json",
    "identity_chain_entry",
    "key_replacement_entry",
]


def identity_chain_entry(name: Sequence[str], public_keys: Sequence[str]) -> Entry:
    """First entry of a new identity chain; its chain ID covers "IdentityChain" + name.

    Raises:
        AddressError: a key is not a valid idpub string, or no key is given.
    """
    if not public_keys:
        raise AddressError("an identity needs at least one idpub key")
    for key in public_keys:
        public_key_from_identity(key)
    ext_ids = [b"IdentityChain", *(part.encode("utf-8") for part in name)]
    content = go_json_dumps({"keys": list(public_keys), "version": 1})
    return Entry.first_entry(ext_ids, content)


def key_replacement_entry(
    chain_id: str, old_key: str, new_key: str, *, signer: SigningKey
) -> Entry:
    """``ReplaceKey`` entry in identity chain ``chain_id`` (64 hex), signed by ``signer``.

    Raises:
        DecodeError: chain ID not 64 hex. AddressError: old/new key not an idpub string.
    """
    chain_hex = _chain_hex(chain_id, "chainid")
    public_key_from_identity(old_key)
    public_key_from_identity(new_key)
    signature = signer.sign((chain_hex + old_key + new_key).encode())
    ext_ids = (b"ReplaceKey", old_key.encode(), new_key.encode(), signature, _signer_id(signer))
    return Entry(bytes.fromhex(chain_hex), ext_ids, b"")


def attributes_json(attributes: Sequence[tuple[Any, Any]]) -> bytes:
    """Content of an attribute entry: Go JSON of ``[{"key": k, "value": v}, ...]``."""
    return go_json_dumps([{"key": key, "value": value} for key, value in attributes])


def attribute_entry(
    *,
    receiver_chain_id: str,
    destination_chain_id: str,
    attributes: Sequence[tuple[Any, Any]],
    signer: SigningKey,
    signer_chain_id: str,
) -> Entry:
    """``IdentityAttribute`` entry in the destination chain (section 8.1).

    Raises:
        DecodeError: a chain ID that is not 64 hex. ValueError: an attribute not encodable.
    """
    receiver = _chain_hex(receiver_chain_id, "receiver-chainid")
    destination = _chain_hex(destination_chain_id, "destination-chainid")
    signer_chain = _chain_hex(signer_chain_id, "signer-chainid")
    content = attributes_json(attributes)
    signature = signer.sign((receiver + destination).encode() + sha256(content))
    ext_ids = (
        b"IdentityAttribute",
        receiver.encode(),
        signature,
        _signer_id(signer),
        signer_chain.encode(),
    )
    return Entry(bytes.fromhex(destination), ext_ids, content)


def attribute_endorsement_entry(
    *, destination_chain_id: str, entry_hash: str, signer: SigningKey, signer_chain_id: str
) -> Entry:
    """``IdentityAttributeEndorsement`` entry in the destination chain (section 8.1).

    Raises:
        DecodeError: a chain ID or the entry hash is not 64 hex.
    """
    destination = _chain_hex(destination_chain_id, "destination-chainid")
    attribute_hash = _chain_hex(entry_hash, "entry-hash")
    signer_chain = _chain_hex(signer_chain_id, "signer-chainid")
    signature = signer.sign((destination + attribute_hash).encode())
    ext_ids = (
        b"IdentityAttributeEndorsement",
        signature,
        _signer_id(signer),
        signer_chain.encode(),
    )
    return Entry(bytes.fromhex(destination), ext_ids, attribute_hash.encode())


def _signer_id(signer: SigningKey) -> bytes:
    return identity_public_key(signer.public_key).encode()


def _chain_hex(text: str, what: str) -> str:
    return to_hex(from_hex(text, what, size=32))
