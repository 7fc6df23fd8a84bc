"""The decoders fuzzed by ``test_fuzz_decoders.py``, one ``Codec`` row each.

Each row names a decoder, the typed errors it documents, a strategy of valid encodings
and the matching encoder. Valid encodings reuse the generators the per-module tests define
(blocks, coin transactions, anchor-chain transactions) and the consistent proof bundles
(versions 1 and 2) of ``tests/ledger/anchor/bundles.py``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ledger.core import addresses as addr
from ledger.core.anchor_record import (
    POW_ANCHOR_CHAIN_ID,
    AnchorRecord,
    ContractRef,
    PowRef,
    WindowCommitment,
    decode_anchor_payload,
    encode_anchor_payload,
    parse_signed_record,
)
from ledger.core.blocks.admin import AdminBlock
from ledger.core.blocks.coin import FactoidBlock
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.blocks.entry_credit import EntryCreditBlock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.errors import (
    AddressError,
    DecodeError,
    LimitError,
    SignatureError,
)
from ledger.core.keys import SigningKey
from ledger.core.merkle import MerkleNode
from ledger.core.pow.encoding import (
    decode_compact_size,
    encode_compact_size,
    from_display_hex,
    to_display_hex,
)
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.tx import PowTransaction
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import ProofError
from ledger.core.proof.verify import verify_bundle
from ledger.core.receipt import Receipt, ReceiptError, verify_receipt
from ledger.core.transaction import Transaction
from ledger.core.varint import decode_varint, encode_varint
from tests.ledger.anchor.bundles import Forged, forge_bundle
from tests.ledger.core.test_blocks_admin import ablocks
from tests.ledger.core.test_blocks_coin import fblocks
from tests.ledger.core.test_blocks_directory import dblocks
from tests.ledger.core.test_blocks_entry_block import eblocks
from tests.ledger.core.test_blocks_entry_credit import ecblocks
from tests.ledger.core.test_pow_codecs import tx_strategy
from tests.ledger.core.test_receipt import GO_CLIENT_RECEIPT
from tests.ledger.core.test_transaction import transactions

hashes = st.binary(min_size=32, max_size=32)
uint32 = st.integers(0, 2**32 - 1)
uint48 = st.integers(0, 2**48 - 1)
uint64 = st.integers(0, 2**64 - 1)
KEY = SigningKey.from_seed(bytes(range(32)))
FORMAT = (DecodeError, LimitError)


@dataclass(frozen=True)
class Codec:
    """One decoder under test.

    Attributes:
        name: test id.
        decode: encoding -> value; raises one of ``errors`` on bad input.
        errors: the typed errors the decoder documents.
        valid: strategy of valid encodings (bytes, text or JSON objects).
        encode: value -> encoding.
        strict: every value has exactly one encoding, so an input that decodes re-encodes
            to itself (False where the format allows several: Factom varints with leading
            zero groups, upper-case hex, JSON whitespace and key order).
        then: a further check run on a decoded value (signature, Merkle walk), which may
            raise only ``then_errors``.
    """

    name: str
    decode: Callable[[Any], Any]
    errors: tuple[type[Exception], ...]
    valid: st.SearchStrategy[Any]
    encode: Callable[[Any], Any] | None
    strict: bool = True
    then: Callable[[Any], object] | None = None
    then_errors: tuple[type[Exception], ...] = ()


# -- valid encodings -------------------------------------------------------------------


def _entries() -> st.SearchStrategy[Entry]:
    ext_ids = st.lists(st.binary(max_size=40), max_size=5).map(tuple)
    return st.builds(Entry, hashes, ext_ids, st.binary(max_size=300))


_commit_entries = st.builds(
    lambda entry, ts: CommitEntry.create(KEY, entry, timestamp_ms=ts).marshal(), _entries(), uint48
)
_commit_chains = st.builds(
    lambda ext, content, ts: CommitChain.create(
        KEY, Entry.first_entry(ext, content), timestamp_ms=ts
    ).marshal(),
    st.lists(st.binary(min_size=1, max_size=20), min_size=1, max_size=3),
    st.binary(max_size=100),
    uint48,
)
_pow_headers = st.builds(BlockHeader, uint32, hashes, hashes, uint32, uint32, uint32)
_windows = st.builds(
    lambda address, low, high, root: WindowCommitment(
        address, min(low, high), max(low, high), root
    ),
    st.binary(min_size=20, max_size=20),
    uint48,
    uint48,
    hashes,
)
_texts = st.text(max_size=70)
_pow_refs = st.builds(PowRef, _texts, _texts, uint64, uint64, _texts)


@st.composite
def anchor_records(draw: st.DrawFn) -> AnchorRecord:
    keymr, db_height, record_height = draw(hashes), draw(uint32), draw(uint32)
    if draw(st.booleans()):
        return AnchorRecord(db_height, keymr, record_height, pow=draw(_pow_refs))
    window = draw(_windows)
    contract = ContractRef(
        window.address_hex, draw(_texts), draw(_texts), draw(uint64), draw(uint64)
    )
    return AnchorRecord(db_height, keymr, record_height, contract=contract, window=window)


_merkle_nodes = st.builds(MerkleNode, hashes, hashes, hashes)
_receipts = st.builds(
    Receipt,
    hashes,
    st.lists(_merkle_nodes, max_size=6),
    hashes,
    hashes,
    uint32,
    uint64,
    st.none() | st.binary(max_size=80),
)


@functools.cache
def forged() -> Forged:
    """One consistent bundle (mined once: 3 headers at 8 bits)."""
    return forge_bundle(difficulty_bits=8, headers=3)


@functools.cache
def forged_v2() -> Forged:
    """A consistent version-2 bundle (aggregated), same policy as ``forged()``."""
    return forge_bundle(difficulty_bits=8, headers=3, private="aggregated")


def _bundle_json() -> st.SearchStrategy[dict[str, Any]]:
    """Version 1 or version 2 (docs/proof-bundle.md), as JSON objects."""
    return st.sampled_from([forged, forged_v2]).map(lambda make: make().bundle.to_json())


def _whole_varint(raw: bytes) -> int:
    value, end = decode_varint(raw)
    if end != len(raw):
        raise DecodeError("trailing bytes after the varint")
    return value


def _whole_compact_size(raw: bytes) -> int:
    value, end = decode_compact_size(raw)
    if end != len(raw):
        raise DecodeError("trailing bytes after the CompactSize")
    return value


def _verify_commit(commit: CommitEntry | CommitChain) -> None:
    commit.verify()


def _verify_receipt(receipt: Receipt) -> None:
    verify_receipt(receipt)


def _signed_record(content: bytes) -> AnchorRecord:
    """A record whose signature is good: only the content is hostile."""
    entry = Entry(POW_ANCHOR_CHAIN_ID, (KEY.sign(content),), content)
    return parse_signed_record(entry, [KEY.public_key])


# -- the tables ------------------------------------------------------------------------

BYTE_CODECS = [
    Codec("entry", Entry.unmarshal, FORMAT, _entries().map(Entry.marshal), Entry.marshal),
    Codec(
        "commit-entry",
        CommitEntry.unmarshal,
        FORMAT,
        _commit_entries,
        CommitEntry.marshal,
        then=_verify_commit,
        then_errors=(SignatureError,),
    ),
    Codec(
        "commit-chain",
        CommitChain.unmarshal,
        FORMAT,
        _commit_chains,
        CommitChain.marshal,
        then=_verify_commit,
        then_errors=(SignatureError,),
    ),
    Codec(
        "directory-block",
        DirectoryBlock.unmarshal,
        FORMAT,
        dblocks.map(DirectoryBlock.marshal),
        DirectoryBlock.marshal,
    ),
    Codec(
        "admin-block",
        AdminBlock.unmarshal,
        FORMAT,
        ablocks.map(AdminBlock.marshal),
        AdminBlock.marshal,
    ),
    Codec(
        "entry-credit-block",
        EntryCreditBlock.unmarshal,
        FORMAT,
        ecblocks.map(EntryCreditBlock.marshal),
        EntryCreditBlock.marshal,
        strict=False,
    ),
    Codec(
        "coin-block",
        FactoidBlock.unmarshal,
        FORMAT,
        fblocks().map(FactoidBlock.marshal),
        FactoidBlock.marshal,
        strict=False,
    ),
    Codec(
        "entry-block",
        EntryBlock.unmarshal,
        FORMAT,
        eblocks.map(EntryBlock.marshal),
        EntryBlock.marshal,
    ),
    Codec(
        "coin-transaction",
        Transaction.unmarshal,
        FORMAT,
        transactions().map(Transaction.marshal),
        Transaction.marshal,
        strict=False,
    ),
    Codec(
        "varint",
        _whole_varint,
        (DecodeError,),
        uint64.map(encode_varint),
        encode_varint,
        strict=False,
    ),
    Codec(
        "anchor-payload",
        decode_anchor_payload,
        (DecodeError,),
        st.builds(encode_anchor_payload, uint48, hashes),
        lambda value: encode_anchor_payload(*value),
    ),
    Codec(
        "window-payload",
        WindowCommitment.from_payload,
        (DecodeError,),
        _windows.map(WindowCommitment.payload),
        WindowCommitment.payload,
    ),
    Codec(
        "anchor-record",
        AnchorRecord.from_content,
        (DecodeError,),
        anchor_records().map(AnchorRecord.to_content),
        AnchorRecord.to_content,
        strict=False,
    ),
    Codec(
        "signed-anchor-record",
        _signed_record,
        (DecodeError,),
        anchor_records().filter(lambda r: r.pow is not None).map(AnchorRecord.to_content),
        AnchorRecord.to_content,
        strict=False,
    ),
    Codec(
        "proof-bundle-text",
        ProofBundle.loads,
        (ProofError,),
        _bundle_json().map(lambda obj: json.dumps(obj).encode()),
        lambda bundle: bundle.dumps().encode(),
        strict=False,
    ),
    Codec(
        "pow-header",
        BlockHeader.unmarshal,
        FORMAT,
        _pow_headers.map(BlockHeader.marshal),
        BlockHeader.marshal,
    ),
    Codec(
        "pow-transaction",
        PowTransaction.unmarshal,
        FORMAT,
        tx_strategy.map(PowTransaction.marshal),
        PowTransaction.marshal,
    ),
    Codec(
        "compact-size",
        _whole_compact_size,
        (DecodeError,),
        uint64.map(encode_compact_size),
        encode_compact_size,
    ),
]

_ADDRESS_KINDS: list[tuple[str, Callable[[bytes], str], Callable[[str], bytes]]] = [
    ("FA", addr.fct_public_address, addr.rcd_hash_from_fct_address),
    ("Fs", addr.fct_secret_address, addr.seed_from_fct_secret),
    ("EC", addr.ec_public_address, addr.public_key_from_ec_address),
    ("Es", addr.ec_secret_address, addr.seed_from_ec_secret),
    ("idpub", addr.identity_public_key, addr.public_key_from_identity),
    ("idsec", addr.identity_secret_key, addr.seed_from_identity_secret),
]
TEXT_CODECS = [
    *(
        Codec(f"address-{kind}", decode, (AddressError,), hashes.map(encode), encode)
        for kind, encode, decode in _ADDRESS_KINDS
    ),
    Codec(
        "address-kind",
        addr.address_kind,
        (AddressError,),
        st.sampled_from(_ADDRESS_KINDS).flatmap(lambda k: hashes.map(k[1])),
        None,
    ),
    Codec(
        "public-address-for-secret",
        addr.public_address_for_secret,
        (AddressError,),
        st.sampled_from([k for k in _ADDRESS_KINDS if k[0] in ("Fs", "Es", "idsec")]).flatmap(
            lambda k: hashes.map(k[1])
        ),
        None,
    ),
    Codec(
        "base58",
        addr.base58_decode,
        (DecodeError,),
        st.binary(max_size=40).map(addr.base58_encode),
        addr.base58_encode,
    ),
    Codec(
        "display-hex",
        from_display_hex,
        (DecodeError,),
        hashes.map(to_display_hex),
        to_display_hex,
        strict=False,
    ),
    Codec(
        "entry-hex",
        Entry.from_hex,
        FORMAT,
        _entries().map(Entry.to_hex),
        Entry.to_hex,
        strict=False,
    ),
    Codec(
        "commit-entry-hex",
        CommitEntry.from_hex,
        FORMAT,
        _commit_entries.map(bytes.hex),
        CommitEntry.to_hex,
        strict=False,
    ),
    Codec(
        "commit-chain-hex",
        CommitChain.from_hex,
        FORMAT,
        _commit_chains.map(bytes.hex),
        CommitChain.to_hex,
        strict=False,
    ),
]

JSON_CODECS = [
    Codec(
        "receipt",
        Receipt.from_json,
        (DecodeError,),
        st.just(GO_CLIENT_RECEIPT) | _receipts.map(Receipt.to_json),
        Receipt.to_json,
        strict=False,
        then=_verify_receipt,
        then_errors=(ReceiptError,),
    ),
    Codec(
        "merkle-node",
        MerkleNode.from_json,
        (DecodeError,),
        _merkle_nodes.map(MerkleNode.to_json),
        MerkleNode.to_json,
        strict=False,
    ),
    Codec(
        "entry-json",
        Entry.from_json,
        FORMAT,
        _entries().map(Entry.to_json),
        Entry.to_json,
        strict=False,
    ),
    Codec(
        "pow-ref",
        PowRef.from_json,
        (DecodeError,),
        _pow_refs.map(PowRef.to_json),
        PowRef.to_json,
        strict=False,
    ),
    Codec(
        "contract-ref",
        ContractRef.from_json,
        (DecodeError,),
        st.builds(ContractRef, _texts, _texts, _texts, uint64, uint64).map(ContractRef.to_json),
        ContractRef.to_json,
        strict=False,
    ),
    Codec(
        "proof-bundle",
        ProofBundle.from_json,
        (ProofError,),
        _bundle_json(),
        ProofBundle.to_json,
        strict=False,
        then=lambda bundle: verify_bundle(bundle, policy=forged().policy),
        then_errors=(ProofError,),
    ),
]


def codec_ids(codecs: Sequence[Codec]) -> list[str]:
    """Test ids: the codec names."""
    return [codec.name for codec in codecs]
