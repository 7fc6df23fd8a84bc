"""The proof bundle (format versions 1 and 2): typed parts, the JSON form, and assembly.

A bundle (``docs/proof-bundle.md``) holds the document's SHA-256, the entry bytes, the
receipt (entry hash -> entry block KeyMR -> directory block KeyMR), the directory block
(header + body, so its KeyMR is recomputed), the anchor transaction of that directory block
with its Merkle path in the anchor block, and the anchor block headers from that block to
the confirmation depth; optionally the window ("contract") anchor.

Version 1 is for clear-text entries, which carry the document hash itself. Version 2 is for
private entries (``ledger.core.notary_entry``): it adds the document's commitment nonce
(``ledger.core.commitment``) and, when the entry carries the root of an aggregation tree
rather than the document's own commitment, the document's leaf index, the tree size and the
audit path (``ledger.core.aggregation``). ``ProofBundle.version`` follows from the parts: 2
exactly when a nonce is present.

Parsing checks shapes and the canonical form (docs/proof-bundle.md, "Canonical form") and
raises ``ProofError`` at ``Step.FORMAT``: every object has exactly its keys (no unknown,
missing or duplicated key), hex is lower case without ``0x`` (the contract address alone
is ``0x`` + lower-case hex), integers are JSON integers (not floats, booleans or strings),
and JSON's ``NaN``/``Infinity`` are refused. So no field a forger could re-spell or add
goes unnoticed. Lengths and meanings are checked by the verification step that uses each
field (``ledger.core.proof.verify``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import DecodeError
from ledger.core.hexbytes import from_hex, from_hex_list
from ledger.core.proof.steps import ProofError, Step
from ledger.core.receipt import Receipt
from ledger.core.timestamps.bundle_part import TimestampsPart

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSIONS",
    "Aggregation",
    "AnchorPart",
    "ContractPart",
    "Node",
    "ProofBundle",
    "ReceiptPart",
    "TxProof",
    "build_bundle",
]

BUNDLE_FORMAT = "notary-proof-bundle"
#: The versions this module reads and writes (docs/proof-bundle.md, "Versioning").
BUNDLE_VERSIONS = (1, 2, 3)

#: A Merkle node as the bundle holds it: (left, right, top), raw bytes as read.
Node = tuple[bytes, bytes, bytes]


@dataclass(frozen=True)
class ReceiptPart:
    """The receipt (docs/formats.md §6) without its unbound timestamp; bytes as read."""

    entry_hash: bytes
    branch: tuple[Node, ...]
    entry_block_keymr: bytes
    directory_block_keymr: bytes
    directory_block_height: int


@dataclass(frozen=True)
class TxProof:
    """A transaction of the anchor chain and its place in a block.

    ``txid`` is the stated txid (internal order); ``merkle_path`` holds sibling hashes
    (internal order) from the transaction up, sides given by ``tx_index``.
    """

    transaction: bytes
    txid: bytes
    tx_index: int
    merkle_path: tuple[bytes, ...]


@dataclass(frozen=True)
class AnchorPart:
    """The proof-of-work anchor: chain name, transaction, headers (raw, oldest first)."""

    chain: str
    tx: TxProof
    headers: tuple[bytes, ...]


@dataclass(frozen=True)
class ContractPart:
    """The window anchor: window, branch KeyMR -> window root, and where its tx sits."""

    contract_address: bytes
    height_min: int
    height_max: int
    window_mr: bytes
    branch: tuple[Node, ...]
    tx: TxProof
    header_index: int


@dataclass(frozen=True)
class Aggregation:
    """Where a document's commitment sits in the aggregation tree its entry carries.

    Attributes:
        leaf_index: the commitment's leaf position, ``0 <= leaf_index < tree_size``.
        tree_size: the number of leaves, as the batch entry states it.
        audit_path: sibling hashes (raw 32 bytes each), leaf level first (RFC 9162
            section 2.1.3; ``ledger.core.aggregation.AggregationTree.audit_path``).

    Ranges and lengths are checked by the verifier's step 3, not here.
    """

    leaf_index: int
    tree_size: int
    audit_path: tuple[bytes, ...]


@dataclass(frozen=True)
class ProofBundle:
    """A parsed bundle. Byte fields are raw and of whatever length the JSON held: lengths
    are checked by the verification step that uses them.

    ``commitment_nonce`` (32 bytes when well formed) makes it a version-2 bundle;
    ``aggregation`` is only allowed with a nonce (``ProofError`` at step 0 otherwise).
    """

    document_sha256: bytes
    entry: bytes
    receipt: ReceiptPart
    directory_block: bytes
    anchor: AnchorPart
    contract: ContractPart | None = None
    commitment_nonce: bytes | None = None
    aggregation: Aggregation | None = None
    #: Independent timestamps of the KeyMR (``ledger.core.timestamps.bundle_part``):
    #: present makes it a version-3 bundle.
    timestamps: TimestampsPart | None = None

    def __post_init__(self) -> None:
        if self.aggregation is not None and self.commitment_nonce is None:
            raise ProofError(
                Step.FORMAT, "an aggregation needs a commitment nonce (bundle version 2)"
            )

    @property
    def version(self) -> int:
        """1 for a clear-text entry's bundle, 2 when the entry publishes a commitment, 3
        when it carries independent timestamps (either kind of entry)."""
        if self.timestamps is not None:
            return 3
        return 1 if self.commitment_nonce is None else 2

    def to_json(self) -> dict[str, Any]:
        """The bundle's JSON object (its ``version``'s layout, docs/proof-bundle.md)."""
        r = self.receipt
        private: dict[str, Any] = {}
        if self.commitment_nonce is not None:
            private = {
                "commitment": {"nonce": self.commitment_nonce.hex()},
                "aggregation": _aggregation_json(self.aggregation),
            }
        elif self.timestamps is not None:
            private = {"commitment": None, "aggregation": None}
        if self.timestamps is not None:
            private["timestamps"] = self.timestamps.to_json()
        return {
            "format": BUNDLE_FORMAT,
            "version": self.version,
            "document": {"sha256": self.document_sha256.hex()},
            **private,
            "entry": {"raw": self.entry.hex()},
            "receipt": {
                "entryhash": r.entry_hash.hex(),
                "merklebranch": [_node_json(n) for n in r.branch],
                "entryblockkeymr": r.entry_block_keymr.hex(),
                "directoryblockkeymr": r.directory_block_keymr.hex(),
                "directoryblockheight": r.directory_block_height,
            },
            "directory_block": {"raw": self.directory_block.hex()},
            "anchor": {
                "chain": self.anchor.chain,
                **_tx_json(self.anchor.tx),
                "headers": [h.hex() for h in self.anchor.headers],
            },
            "contract": None if self.contract is None else _contract_json(self.contract),
        }

    @classmethod
    def from_json(cls, obj: Any) -> ProofBundle:
        """Parse a bundle object. Raises ``ProofError`` (step 0) for a malformed bundle."""
        top = _object(obj, "bundle")
        if top.get("format") != BUNDLE_FORMAT:
            raise ProofError(Step.FORMAT, f"not a {BUNDLE_FORMAT} document")
        version = top.get("version")
        if type(version) is not int or version not in BUNDLE_VERSIONS:
            raise ProofError(Step.FORMAT, f"unsupported bundle version {version!r}")
        _keys(top, "bundle", _TOP_KEYS[version])
        private = version == 2 or (version == 3 and top["commitment"] is not None)
        if version == 3 and not private and top["aggregation"] is not None:
            raise _fail("aggregation must be null without a commitment")
        nonce, aggregation = _private_parts(top) if private else (None, None)
        receipt = _object(top.get("receipt"), "receipt", _RECEIPT_KEYS)
        anchor = _object(top.get("anchor"), "anchor", _ANCHOR_KEYS)
        contract = top.get("contract")
        return cls(
            document_sha256=_hex(_object(top.get("document"), "document", {"sha256"}), "sha256"),
            entry=_hex(_object(top.get("entry"), "entry", {"raw"}), "raw"),
            receipt=ReceiptPart(
                entry_hash=_hex(receipt, "entryhash"),
                branch=_nodes(receipt.get("merklebranch"), "receipt merklebranch"),
                entry_block_keymr=_hex(receipt, "entryblockkeymr"),
                directory_block_keymr=_hex(receipt, "directoryblockkeymr"),
                directory_block_height=_uint(receipt, "directoryblockheight"),
            ),
            directory_block=_hex(
                _object(top.get("directory_block"), "directory_block", {"raw"}), "raw"
            ),
            anchor=AnchorPart(
                chain=_text(anchor, "chain"),
                tx=_tx_proof(anchor),
                headers=_hex_list(anchor.get("headers"), "anchor headers"),
            ),
            contract=None
            if contract is None
            else _contract_part(_object(contract, "contract", _CONTRACT_KEYS)),
            commitment_nonce=nonce,
            aggregation=aggregation,
            timestamps=_timestamps_part(top) if version == 3 else None,
        )

    def dumps(self) -> str:
        """The bundle as indented JSON text (ends with a newline)."""
        return json.dumps(self.to_json(), indent=2) + "\n"

    @classmethod
    def loads(cls, text: str | bytes) -> ProofBundle:
        """Parse bundle JSON text. ``ProofError`` (step 0) for bad JSON, a duplicated key,
        ``NaN``/``Infinity``, or a bad bundle."""
        try:
            obj = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        except ProofError:
            raise
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            # RecursionError: nesting deeper than the parser's stack (a hostile file)
            raise ProofError(Step.FORMAT, f"not valid JSON: {exc}") from exc
        return cls.from_json(obj)


#: The keys of each object, exactly (docs/proof-bundle.md, "Layout").
_TX_KEYS = frozenset({"transaction", "txid", "tx_index", "merkle_path"})
_TOP_KEYS = {
    1: frozenset(
        {"format", "version", "document", "entry", "receipt", "directory_block", "anchor"}
        | {"contract"}
    ),
    2: frozenset(
        {"format", "version", "document", "commitment", "aggregation", "entry", "receipt"}
        | {"directory_block", "anchor", "contract"}
    ),
    3: frozenset(
        {"format", "version", "document", "commitment", "aggregation", "entry", "receipt"}
        | {"directory_block", "anchor", "contract", "timestamps"}
    ),
}
_RECEIPT_KEYS = frozenset(
    {"entryhash", "merklebranch", "entryblockkeymr", "directoryblockkeymr"}
    | {"directoryblockheight"}
)
_ANCHOR_KEYS = _TX_KEYS | {"chain", "headers"}
_CONTRACT_KEYS = _TX_KEYS | {
    "contractaddress",
    "dbheightmin",
    "dbheightmax",
    "windowmr",
    "merklebranch",
    "header_index",
}
_NODE_KEYS = frozenset({"left", "right", "top"})
_AGGREGATION_KEYS = frozenset({"leaf_index", "tree_size", "audit_path"})


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` object hook: a key twice is refused (which one counts differs)."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _fail(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise _fail(f"{name} is not a JSON number")


def _keys(obj: Mapping[str, Any], what: str, keys: frozenset[str] | set[str]) -> None:
    """Exactly ``keys``: an unknown key or a missing one is refused."""
    unknown = sorted(set(obj) - keys)
    if unknown:
        raise _fail(f"{what} has unknown keys: {', '.join(unknown)}")
    missing = sorted(keys - set(obj))
    if missing:
        raise _fail(f"{what} lacks keys: {', '.join(missing)}")


def _timestamps_part(top: Mapping[str, Any]) -> TimestampsPart:
    """Version 3's ``timestamps``, in the canonical form: exact keys (``opentimestamps``
    may be absent in a bundle written before it existed: read as none), lower-case
    ``root``."""
    section = _object(top.get("timestamps"), "timestamps")
    keys = {"root", "rfc3161"} | ({"opentimestamps"} & set(section))
    _keys(section, "timestamps", keys)
    _hex(section, "root")
    tokens = section["rfc3161"]
    if not isinstance(tokens, list):
        raise _fail("timestamps.rfc3161 must be a list")
    for i, item in enumerate(tokens):
        _object(item, f"timestamps.rfc3161[{i}]", {"token", "certificates"})
    stamps = section.get("opentimestamps", [])
    if not isinstance(stamps, list):
        raise _fail("timestamps.opentimestamps must be a list")
    for i, item in enumerate(stamps):
        _object(item, f"timestamps.opentimestamps[{i}]", {"ots", "headers"})
    try:
        return TimestampsPart.from_json(section)
    except DecodeError as exc:
        raise _fail(str(exc)) from exc


def _aggregation_json(aggregation: Aggregation | None) -> dict[str, Any] | None:
    if aggregation is None:
        return None
    return {
        "leaf_index": aggregation.leaf_index,
        "tree_size": aggregation.tree_size,
        "audit_path": [h.hex() for h in aggregation.audit_path],
    }


def _private_parts(top: Mapping[str, Any]) -> tuple[bytes, Aggregation | None]:
    """Version 2's ``commitment`` and ``aggregation`` (present; ``null`` for one document)."""
    nonce = _hex(_object(top.get("commitment"), "commitment", {"nonce"}), "nonce")
    value = top["aggregation"]
    if value is None:
        return nonce, None
    obj = _object(value, "aggregation", _AGGREGATION_KEYS)
    return nonce, Aggregation(
        leaf_index=_uint(obj, "leaf_index"),
        tree_size=_uint(obj, "tree_size"),
        audit_path=_hex_list(obj.get("audit_path"), "audit_path"),
    )


def _node_json(node: Node) -> dict[str, str]:
    return {"left": node[0].hex(), "right": node[1].hex(), "top": node[2].hex()}


def _tx_json(tx: TxProof) -> dict[str, Any]:
    return {
        "transaction": tx.transaction.hex(),
        "txid": tx.txid[::-1].hex(),
        "tx_index": tx.tx_index,
        "merkle_path": [h.hex() for h in tx.merkle_path],
    }


def _contract_json(c: ContractPart) -> dict[str, Any]:
    return {
        "contractaddress": "0x" + c.contract_address.hex(),
        "dbheightmin": c.height_min,
        "dbheightmax": c.height_max,
        "windowmr": c.window_mr.hex(),
        "merklebranch": [_node_json(n) for n in c.branch],
        **_tx_json(c.tx),
        "header_index": c.header_index,
    }


def _fail(what: str) -> ProofError:
    return ProofError(Step.FORMAT, what)


def _object(
    value: Any, what: str, keys: frozenset[str] | set[str] | None = None
) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"{what} must be a JSON object")
    if keys is not None:
        _keys(value, what, keys)
    return value


def _hex(obj: Mapping[str, Any], key: str) -> bytes:
    """Canonical hex: lower case, no ``0x``."""
    try:
        return from_hex(obj.get(key), key, lowercase=True)
    except DecodeError as exc:
        raise _fail(str(exc)) from exc


def _address(obj: Mapping[str, Any], key: str) -> bytes:
    """The contract address: ``0x`` and lower-case hex, as docs/proof-bundle.md writes it."""
    value = obj.get(key)
    if not isinstance(value, str) or not value.startswith("0x"):
        raise _fail(f"{key} must be 0x and lowercase hex")
    try:
        return from_hex(value[2:], key, lowercase=True)
    except DecodeError as exc:
        raise _fail(str(exc)) from exc


def _uint(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(f"{key} must be a non-negative integer")
    return value


def _text(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise _fail(f"{key} must be a string")
    return value


def _hex_list(value: Any, what: str) -> tuple[bytes, ...]:
    try:
        return from_hex_list(value, what, lowercase=True)
    except DecodeError as exc:
        raise _fail(str(exc)) from exc


def _nodes(value: Any, what: str) -> tuple[Node, ...]:
    if not isinstance(value, list):
        raise _fail(f"{what} must be a list")
    nodes = []
    for i, item in enumerate(value):
        node = _object(item, f"{what}[{i}]", _NODE_KEYS)
        nodes.append((_hex(node, "left"), _hex(node, "right"), _hex(node, "top")))
    return tuple(nodes)


def _tx_proof(obj: Mapping[str, Any]) -> TxProof:
    return TxProof(
        transaction=_hex(obj, "transaction"),
        txid=_hex(obj, "txid")[::-1],
        tx_index=_uint(obj, "tx_index"),
        merkle_path=_hex_list(obj.get("merkle_path"), "merkle_path"),
    )


def _contract_part(obj: Mapping[str, Any]) -> ContractPart:
    return ContractPart(
        contract_address=_address(obj, "contractaddress"),
        height_min=_uint(obj, "dbheightmin"),
        height_max=_uint(obj, "dbheightmax"),
        window_mr=_hex(obj, "windowmr"),
        branch=_nodes(obj.get("merklebranch"), "contract merklebranch"),
        tx=_tx_proof(obj),
        header_index=_uint(obj, "header_index"),
    )


def build_bundle(
    *,
    document_sha256: bytes,
    entry: bytes,
    receipt: Mapping[str, Any] | Receipt,
    directory_block: bytes,
    anchor_proof: Mapping[str, Any],
    commitment_nonce: bytes | None = None,
    aggregation: Aggregation | None = None,
    timestamps: TimestampsPart | None = None,
) -> ProofBundle:
    """Assemble a bundle from what the services answer (it is not verified here).

    Args:
        document_sha256: raw 32 bytes.
        entry: the marshalled entry.
        receipt: the node's ``receipt`` object (or a ``Receipt``); the timestamp is dropped.
        directory_block: exact bytes of the directory block (``dblock-by-height`` rawdata).
        anchor_proof: the anchor service's ``anchor-proof`` result:
            ``{"anchor": {...}, "contract": {...} | null}`` (docs/proof-bundle.md).
        commitment_nonce: the document's 32-byte nonce (``ledger.core.commitment``) when
            the entry publishes a commitment: the bundle is then version 2. None: a
            clear-text entry that carries the document hash, version 1.
        timestamps: independent timestamps of the KeyMR: the bundle is then version 3.
        aggregation: where the document's commitment sits in the tree whose root and size
            the entry carries (version 2 only); None for a per-document entry.

    Raises:
        ProofError: (step 0) the parts do not form a well-shaped bundle, or an
            ``aggregation`` was given without a ``commitment_nonce``.
    """
    data = receipt.to_json() if isinstance(receipt, Receipt) else dict(receipt)
    data = data.get("receipt", data) if "entry" not in data else data
    entry_obj = _object(data.get("entry"), "receipt entry")
    private: dict[str, Any] = {}
    if commitment_nonce is not None:
        private = {
            "commitment": {"nonce": bytes(commitment_nonce).hex()},
            "aggregation": _aggregation_json(aggregation),
        }
    elif aggregation is not None:
        raise _fail("an aggregation needs a commitment nonce (bundle version 2)")
    if timestamps is not None:
        private.setdefault("commitment", None)
        private.setdefault("aggregation", None)
        private["timestamps"] = timestamps.to_json()
    version = 1 if commitment_nonce is None else 2
    return ProofBundle.from_json(
        {
            "format": BUNDLE_FORMAT,
            "version": 3 if timestamps is not None else version,
            "document": {"sha256": bytes(document_sha256).hex()},
            **private,
            "entry": {"raw": bytes(entry).hex()},
            "receipt": {
                "entryhash": entry_obj.get("entryhash"),
                "merklebranch": data.get("merklebranch"),
                "entryblockkeymr": data.get("entryblockkeymr"),
                "directoryblockkeymr": data.get("directoryblockkeymr"),
                "directoryblockheight": data.get("directoryblockheight"),
            },
            "directory_block": {"raw": bytes(directory_block).hex()},
            "anchor": anchor_proof.get("anchor"),
            "contract": anchor_proof.get("contract"),
        }
    )
