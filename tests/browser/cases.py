"""Bundles for the verification page's browser tests, each with the Python verifier's verdict.

Every case is the bundle's JSON text (bytes, as a person would drop the file), the
document (or None) and the policy; ``python_verdict`` runs ``verify_bundle`` on it exactly
as ``notary verify`` does (``ProofBundle.loads`` of the bytes, the file's SHA-256) and
records what the page must show: the steps held with their text, or the failing step with
its reason, index, expected and computed values.

The cases are the tamper suite of ``tests/ledger/core/test_proof.py`` (its forged bundles
from ``tests/ledger/anchor/bundles.py``, a flipped bit in every byte of every field, the
named forgeries, malformed bundles), a few readings of JSON where the two languages could
differ (floats for integers, ``0x`` and upper-case hex, encodings, duplicate keys), and
seeded random mutations of the bundle text.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ledger.anchor.chain import mine
from ledger.core.anchor_record import WindowCommitment, encode_anchor_payload, window_root
from ledger.core.entry import Entry
from ledger.core.hashing import sha256d
from ledger.core.merkle import merkle_branch
from ledger.core.pow.header import BlockHeader, target_to_bits
from ledger.core.pow.merkle import merkle_path, merkle_root
from ledger.core.pow.tx import anchor_transaction, coinbase_transaction, op_return_script
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import SHIPPED, TrustPolicy
from ledger.core.proof.steps import ProofError, StepReport
from ledger.core.proof.verify import verify_bundle
from tests.ledger.anchor.bundles import (
    CHAIN_ID,
    CONTRACT,
    DOCUMENT,
    Forged,
    _dblocks,
    document_entry,
    forge_bundle,
)
from tests.ledger.core.test_proof import flipped, get, hex_fields, put

#: Reasons that name Python's JSON decoder's own wording; only their prefix is compared.
JSON_REASON_PREFIX = "not valid JSON: "


@dataclass(frozen=True)
class Case:
    """One bundle to verify: JSON text, the document (None: no file), the policy."""

    name: str
    text: bytes
    document: bytes | None
    policy: TrustPolicy

    def to_page(self) -> dict[str, Any]:
        """The case as the page's test hook takes it (hex, so any bytes pass through)."""
        return {
            "name": self.name,
            "text": self.text.hex(),
            "document": None if self.document is None else self.document.hex(),
            "policy": policy_json(self.policy),
        }


def policy_json(policy: TrustPolicy) -> dict[str, Any]:
    """The policy as the page takes it: its policy-file form."""
    return policy.to_json()


def python_verdict(case: Case) -> dict[str, Any]:
    """What ``notary verify`` decides for ``case``, in the page's result shape."""
    steps: list[StepReport] = []
    digest = None if case.document is None else hashlib.sha256(case.document).digest()
    failure = None
    verdict = None
    try:
        bundle = ProofBundle.loads(case.text)
        verdict = verify_bundle(
            bundle, document_sha256=digest, policy=case.policy, on_step=steps.append
        ).lines()
    except ProofError as exc:
        failure = {
            "step": int(exc.step),
            "reason": exc.reason,
            "index": exc.index,
            "expected": None if exc.expected is None else exc.expected.hex(),
            "computed": None if exc.computed is None else exc.computed.hex(),
        }
    return {
        "ok": failure is None,
        "steps": [[int(r.step), r.detail, r.skipped] for r in steps],
        "failure": failure,
        "verdict": verdict,
    }


def page_verdict(result: dict[str, Any]) -> dict[str, Any]:
    """The page's ``run`` result in ``python_verdict``'s shape."""
    failure = result["failure"]
    if failure is not None:
        failure = {k: failure[k] for k in ("step", "reason", "index", "expected", "computed")}
    return {
        "ok": result["ok"],
        "steps": [[s["step"], s["detail"], s["skipped"]] for s in result["steps"]],
        "failure": failure,
        "verdict": None if result["facts"] is None else result["facts"]["verdict"],
    }


def comparable(verdict: dict[str, Any]) -> dict[str, Any]:
    """``verdict`` with a JSON decoder's message cut to its prefix (the wording differs)."""
    failure = verdict["failure"]
    if failure and failure["step"] == 0 and failure["reason"].startswith(JSON_REASON_PREFIX):
        verdict = {**verdict, "failure": {**failure, "reason": JSON_REASON_PREFIX}}
    return verdict


def _text(obj: Any) -> bytes:
    return json.dumps(obj, indent=2).encode()


# -- the tamper suite --------------------------------------------------------------------


def tamper_cases(forged: Forged) -> Iterator[Case]:
    """Every mutation of ``test_proof.py``, as bundle texts."""
    good = forged.bundle.to_json()
    policy = forged.policy

    def case(name: str, obj: Any, document: bytes | None = DOCUMENT, **kw: Any) -> Case:
        return Case(name, _text(obj), document, kw.get("policy", policy))

    yield case("valid", good)
    yield case("valid, no file", good, None)
    plain = forge_bundle(with_contract=False)
    yield Case("valid, no window", _text(plain.bundle.to_json()), DOCUMENT, plain.policy)
    yield from flipped_byte_cases(good, case)
    yield from _integer_and_text_flips(good, case)
    yield from _named_forgeries(forged, good, case)
    yield from _malformed(forged, good, case)


def flipped_byte_cases(good: dict[str, Any], case: Any) -> Iterator[Case]:
    """A flipped bit in every byte of every hex field of ``good``; then its document hash
    flipped with no file given. ``case(name, obj, document=DOCUMENT)`` makes each case."""
    for path in hex_fields(good):
        value = get(good, path)
        for byte in range(len(value.removeprefix("0x")) // 2):
            yield case(f"flip {path} byte {byte}", put(good, path, flipped(value, byte)))
    yield case(
        "flipped document hash, no file",
        put(good, ("document", "sha256"), flipped(good["document"]["sha256"], 5)),
        None,
    )


def _integer_and_text_flips(good: dict[str, Any], case: Any) -> Iterator[Case]:
    for path in [
        ("version",),
        ("receipt", "directoryblockheight"),
        ("anchor", "tx_index"),
        ("contract", "dbheightmin"),
        ("contract", "dbheightmax"),
        ("contract", "tx_index"),
        ("contract", "header_index"),
    ]:
        for bit in range(3):
            yield case(f"int {path} bit {bit}", put(good, path, get(good, path) ^ (1 << bit)))
    for path in [("format",), ("anchor", "chain")]:
        text = get(good, path)
        yield case(f"text {path}", put(good, path, chr(ord(text[0]) ^ 1) + text[1:]))


def _named_forgeries(forged: Forged, good: dict[str, Any], case: Any) -> Iterator[Case]:
    for i, node in enumerate(good["receipt"]["merklebranch"]):
        swapped = {"left": node["right"], "right": node["left"], "top": node["top"]}
        yield case(f"swapped receipt node {i}", put(good, ("receipt", "merklebranch", i), swapped))
    index = good["anchor"]["tx_index"]
    yield case("tx_index side", put(good, ("anchor", "tx_index"), index ^ 1))
    yield case("tx_index beyond", put(good, ("anchor", "tx_index"), index + 4))
    node = good["contract"]["merklebranch"][0]
    swapped = {"left": node["right"], "right": node["left"], "top": node["top"]}
    yield case("swapped window node", put(good, ("contract", "merklebranch", 0), swapped))
    weak = forge_bundle(short_work_header=1)
    yield Case("short work", _text(weak.bundle.to_json()), DOCUMENT, weak.policy)
    yield case("missed target", put(good, ("anchor", "headers", 2), _missed(good)))
    p = forged.policy
    for name, other in [
        ("harder policy", replace(p, max_target=p.max_target >> 4)),
        ("deeper policy", replace(p, confirmations=p.confirmations + 1)),
        ("other chain policy", replace(p, chain="bitcoin-mainnet")),
        ("policy one bit harder", replace(p, max_target=p.max_target >> 1)),
        ("policy one bit easier", replace(p, max_target=(p.max_target << 1) | 1)),
        ("policy of the exact depth", p),
        ("policy requiring a window", replace(p, require_window=True)),
        ("policy with a median span", replace(p, median_time_span=3)),
        *((f"shipped {n}", shipped) for n, shipped in SHIPPED.items()),
    ]:
        yield case(name, good, policy=other)
    bare = forge_bundle(with_contract=False)
    strict = replace(bare.policy, require_window=True)
    yield Case("no window, policy requires one", _text(bare.bundle.to_json()), DOCUMENT, strict)
    wrong = forge_bundle(anchored_height=2)
    yield Case("anchor names height 2", _text(wrong.bundle.to_json()), DOCUMENT, wrong.policy)
    yield case("receipt height 2", put(good, ("receipt", "directoryblockheight"), 2))
    headers = good["anchor"]["headers"]
    loose = replace(p, confirmations=1)
    gap = put(good, ("anchor", "headers"), [headers[0], headers[2]])
    yield case("header gap", gap, policy=loose)
    reordered = put(good, ("anchor", "headers"), [headers[0], headers[2], headers[1]])
    yield case("headers reordered", reordered, policy=loose)
    yield case("headers short", put(good, ("anchor", "headers"), headers[:2]))
    yield case("another file", good, DOCUMENT + b" ")
    other = forge_bundle(document=b"something else", with_contract=False)
    yield case(
        "another document's bundle", put(other.bundle.to_json(), ("document",), good["document"])
    )


def _missed(good: dict[str, Any]) -> str:
    last = BlockHeader.unmarshal(bytes.fromhex(good["anchor"]["headers"][-1]))
    nonce = last.nonce + 1
    while True:
        header = BlockHeader(
            last.version, last.prev_hash, last.merkle_root, last.timestamp, last.bits, nonce
        )
        if not header.meets_target():
            return header.marshal().hex()
        nonce += 1


TRAILING_PATHS: list[tuple[str | int, ...]] = [
    ("entry", "raw"),
    ("directory_block", "raw"),
    ("anchor", "transaction"),
    ("anchor", "headers", 0),
    ("anchor", "headers", 2),
    ("anchor", "merkle_path", 0),
    ("receipt", "merklebranch", 0, "left"),
    ("receipt", "entryhash"),
    ("contract", "transaction"),
    ("contract", "merklebranch", 0, "top"),
]


def _malformed(forged: Forged, good: dict[str, Any], case: Any) -> Iterator[Case]:
    for path in TRAILING_PATHS:
        yield case(f"trailing byte {path}", put(good, path, get(good, path) + "00"))
    yield Case("trailing JSON", forged.bundle.dumps().encode() + b"{}", DOCUMENT, forged.policy)
    mutations: list[tuple[str, Any]] = [
        ("no receipt", lambda b: b.pop("receipt")),
        ("version 2", lambda b: b.update(version=2)),
        ("raw zz", lambda b: b["entry"].update(raw="zz")),
        ("raw odd", lambda b: b["entry"].update(raw="abc")),
        ("raw space", lambda b: b["entry"].update(raw="ab cd")),
        ("headers text", lambda b: b["anchor"].update(headers="00")),
        ("tx_index -1", lambda b: b["anchor"].update(tx_index=-1)),
        ("tx_index true", lambda b: b["anchor"].update(tx_index=True)),
        ("node without top", lambda b: b["receipt"]["merklebranch"][0].pop("top")),
    ]
    for name, mutate in mutations:
        bad = json.loads(json.dumps(good))
        mutate(bad)
        yield case(name, bad)


# -- where JSON readings could differ ------------------------------------------------------


def reading_cases(forged: Forged) -> Iterator[Case]:
    """Inputs that a JavaScript reader would take differently from Python's, unless careful."""
    good = forged.bundle.to_json()
    text = forged.bundle.dumps()

    def raw(name: str, data: bytes, document: bytes | None = DOCUMENT) -> Case:
        return Case(name, data, document, forged.policy)

    def obj(name: str, value: Any) -> Case:
        return Case(name, _text(value), DOCUMENT, forged.policy)

    yield raw("version 1.0", text.replace('"version": 1', '"version": 1.0').encode())
    yield raw("version true", text.replace('"version": 1', '"version": true').encode())
    yield raw("version 1e0", text.replace('"version": 1', '"version": 1e0').encode())
    yield raw("version -1", text.replace('"version": 1', '"version": -1').encode())
    yield raw("version NaN", text.replace('"version": 1', '"version": NaN').encode())
    yield raw("version string", text.replace('"version": 1', '"version": "1"').encode())
    yield raw("version list", text.replace('"version": 1', '"version": [1, 2.5, null]').encode())
    yield raw(
        "version object",
        text.replace('"version": 1', '"version": {"a\'b": 1e16, "c": -0.0, "d": 1e-05}').encode(),
    )
    height = good["receipt"]["directoryblockheight"]
    yield raw(
        "height 1.0",
        text.replace(
            f'"directoryblockheight": {height}', f'"directoryblockheight": {height}.0'
        ).encode(),
    )
    yield raw(
        "height -0",
        text.replace(f'"directoryblockheight": {height}', '"directoryblockheight": -0').encode(),
    )
    yield obj("height 2**32", put(good, ("receipt", "directoryblockheight"), 1 << 32))
    yield obj("height 2**32-1", put(good, ("receipt", "directoryblockheight"), (1 << 32) - 1))
    yield obj("tx_index 2**64", put(good, ("anchor", "tx_index"), 1 << 64))
    yield obj("tx_index 2**70+2", put(good, ("anchor", "tx_index"), (1 << 70) + 2))
    yield obj("header_index 2**60", put(good, ("contract", "header_index"), 1 << 60))
    yield obj("dbheightmax 2**48", put(good, ("contract", "dbheightmax"), 1 << 48))
    yield obj("dbheightmin 2**50", put(good, ("contract", "dbheightmin"), 1 << 50))
    yield obj("dbheightmin above max", put(good, ("contract", "dbheightmin"), 3))
    yield raw(
        "integer of 4300 digits", text.replace('"version": 1', '"version": ' + "9" * 4300).encode()
    )
    yield raw(
        "integer of 4301 digits", text.replace('"version": 1', '"version": ' + "9" * 4301).encode()
    )
    yield obj("upper-case hex", put(good, ("entry", "raw"), good["entry"]["raw"].upper()))
    yield obj(
        "0x hex", put(good, ("directory_block", "raw"), "0x" + good["directory_block"]["raw"])
    )
    yield obj(
        "0X hex", put(good, ("directory_block", "raw"), "0X" + good["directory_block"]["raw"])
    )
    yield obj(
        "contract address without 0x",
        put(good, ("contract", "contractaddress"), good["contract"]["contractaddress"][2:]),
    )
    yield obj(
        "contract address of 19 bytes",
        put(good, ("contract", "contractaddress"), good["contract"]["contractaddress"][:-2]),
    )
    yield obj("empty document hash", put(good, ("document", "sha256"), ""))
    yield obj("empty merkle path", put(good, ("anchor", "merkle_path"), []))
    yield obj("no headers", put(good, ("anchor", "headers"), []))
    yield obj("contract null", put(good, ("contract",), None))
    no_contract = dict(good)
    no_contract.pop("contract")
    yield obj("contract missing", no_contract)
    yield obj("contract false", put(good, ("contract",), False))
    yield obj("chain with quote", put(good, ("anchor", "chain"), 'it\'s "x"\n\u00e9\u200b'))
    yield obj("chain number", put(good, ("anchor", "chain"), 7))
    yield obj("unknown keys", {**good, "comment": {"nested": [1, 2.5, None, True]}})
    yield raw(
        "duplicate key, last wins",
        text.replace('"version": 1', '"version": 2, "version": 1').encode(),
    )
    yield raw(
        "duplicate key, last bad",
        text.replace('"version": 1', '"version": 1, "version": 2').encode(),
    )
    yield obj("unknown key in the anchor", put(good, ("anchor", "note"), "confirmed"))
    yield obj("unknown key in a node", put(good, ("receipt", "merklebranch", 0, "side"), "left"))
    yield obj(
        "upper-case contract address",
        put(
            good,
            ("contract", "contractaddress"),
            "0x" + good["contract"]["contractaddress"][2:].upper(),
        ),
    )
    yield obj(
        "upper-case header",
        put(good, ("anchor", "headers", 1), good["anchor"]["headers"][1].upper()),
    )
    yield obj("tx_index 2.0", put(good, ("anchor", "tx_index"), float(good["anchor"]["tx_index"])))
    nested = text.replace('"raw": "', '"raw": "00", "raw": "', 1)
    yield raw("duplicate key in a nested object", nested.encode())
    yield raw("-Infinity", text.replace('"version": 1', '"version": -Infinity').encode())
    yield raw(
        "Infinity as height",
        text.replace(
            f'"directoryblockheight": {height}', '"directoryblockheight": Infinity'
        ).encode(),
    )
    yield raw("UTF-8 BOM", b"\xef\xbb\xbf" + text.encode())
    yield raw("UTF-16 with BOM", text.encode("utf-16"))
    yield raw("UTF-16-LE", text.encode("utf-16-le"))
    yield raw("UTF-32-BE", text.encode("utf-32-be"))
    yield raw("UTF-32 with BOM", text.encode("utf-32"))
    yield raw(
        "latin-1 byte", text.replace('"version": 1', '"x": "\xe9", "version": 1').encode("latin-1")
    )
    yield raw(
        "escaped chain",
        text.replace('"notary-devnet-pow"', '"notary\\u002ddevnet\\u002dpow"').encode(),
    )
    yield raw(
        "lone surrogate", text.replace('"version": 1', '"x": "\\ud800", "version": 1').encode()
    )
    yield raw(
        "surrogate pair",
        text.replace('"version": 1', '"x": "\\ud83d\\ude00", "version": 1').encode(),
    )
    yield raw(
        "control character", text.replace('"version": 1', '"x": "a\tb", "version": 1').encode()
    )
    yield raw("bad escape", text.replace('"version": 1', '"x": "\\q", "version": 1').encode())
    yield raw("trailing comma", (text.rstrip()[:-1].rstrip() + ",\n}").encode())
    yield raw("leading zero", text.replace('"version": 1', '"version": 01').encode())
    yield raw("empty", b"")
    yield raw("whitespace", b" \n\t")
    yield raw("a list", b"[1, 2]")
    yield raw("null", b"null")
    yield raw(
        "nested 500",
        text.replace('"version": 1', '"x": ' + "[" * 500 + "]" * 500 + ', "version": 1').encode(),
    )
    yield from _entry_cases(forged)


def _entry_cases(forged: Forged) -> Iterator[Case]:
    """Entries whose content carries the hash (JSON ``sha256``) rather than an ExtID."""
    digest = hashlib.sha256(DOCUMENT).hexdigest()
    contents = {
        "content json": json.dumps({"sha256": digest}).encode(),
        "content json upper": json.dumps({"sha256": digest.upper()}).encode(),
        "content json utf-16": json.dumps({"sha256": digest}).encode("utf-16"),
        "content json list": json.dumps([{"sha256": digest}]).encode(),
        "content json nan": b'{"sha256": "' + digest.encode() + b'", "x": NaN}',
        "content json 4301 digits": b'{"sha256": "'
        + digest.encode()
        + b'", "x": '
        + b"1" * 4301
        + b"}",
        "content bad utf-8": b'{"sha256": "' + digest.encode() + b'", "x": "\xff"}',
        "content surrogate utf-8": b'{"sha256": "' + digest.encode() + b'", "x": "\xed\xa0\x80"}',
        "content extra data": json.dumps({"sha256": digest}).encode() + b" x",
    }
    good = forged.bundle.to_json()
    for name, content in contents.items():
        entry = Entry(CHAIN_ID, (b"notary:document:v1",), content)
        yield Case(
            name, _text(put(good, ("entry", "raw"), entry.marshal().hex())), DOCUMENT, forged.policy
        )
    raw_ext = Entry(CHAIN_ID, (hashlib.sha256(DOCUMENT).digest(),), b"")
    yield Case(
        "raw ExtID",
        _text(put(good, ("entry", "raw"), raw_ext.marshal().hex())),
        DOCUMENT,
        forged.policy,
    )


# -- random mutations ------------------------------------------------------------------------


def fuzz_cases(forged: Forged, count: int, seed: int = 18) -> Iterator[Case]:
    """``count`` seeded random mutations: bytes of the text, values swapped for others."""
    rng = random.Random(seed)
    good = forged.bundle.to_json()
    text = forged.bundle.dumps().encode()
    leaves = list(_paths(good))
    odd_values: list[Any] = [
        None,
        True,
        0,
        1,
        -1,
        1.5,
        "",
        "00",
        "0x",
        [],
        {},
        "zz",
        1 << 40,
        ["00"],
    ]
    for i in range(count):
        kind = i % 4
        if kind == 0:
            data = bytearray(text)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            yield Case(f"fuzz {i}: bytes", bytes(data), DOCUMENT, forged.policy)
        elif kind == 1:
            cut = rng.randrange(len(text))
            yield Case(
                f"fuzz {i}: cut",
                text[:cut] + text[cut + rng.randint(1, 40) :],
                DOCUMENT,
                forged.policy,
            )
        elif kind == 2:
            path = rng.choice(leaves)
            bad = put(good, path, rng.choice(odd_values))
            yield Case(f"fuzz {i}: {path}", _text(bad), rng.choice([DOCUMENT, None]), forged.policy)
        else:
            path = rng.choice([p for p in leaves if isinstance(get(good, p), str)])
            value = get(good, path)
            cut = rng.randrange(len(value) + 1) // 2 * 2
            bad = put(
                good,
                path,
                value[:cut]
                + "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice([0, 2, 64]))),
            )
            yield Case(f"fuzz {i}: {path} resized", _text(bad), DOCUMENT, forged.policy)


def _paths(obj: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*path, key)
            yield from _paths(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield (*path, i)
            yield from _paths(value, (*path, i))


# -- codec corners: anchor blocks rebuilt around chosen transactions ------------------------


def rebuilt(
    forged: Forged,
    *,
    anchor_tx: bytes | None = None,
    contract_tx: bytes | None = None,
    contract_header: int = 0,
    window: dict[str, Any] | None = None,
    count: int = 3,
) -> dict[str, Any]:
    """The forged bundle with its anchor blocks mined anew around the given transactions.

    Block 0 holds a coinbase and ``anchor_tx``; the contract transaction goes into block
    ``contract_header``; every header meets the forged policy and links to the previous one.
    ``window`` replaces fields of the contract section (a window over other KeyMRs).
    """
    good = forged.bundle.to_json()
    anchor_raw = anchor_tx or bytes.fromhex(good["anchor"]["transaction"])
    contract_raw = contract_tx or bytes.fromhex(good["contract"]["transaction"])
    blocks = [[coinbase_transaction(7 + i).marshal()] for i in range(count)]
    blocks[0].append(anchor_raw)
    blocks[contract_header].append(contract_raw)
    headers: list[bytes] = []
    prev = sha256d(b"the block before")
    for i, block in enumerate(blocks):
        root = merkle_root([sha256d(tx) for tx in block])
        bits = target_to_bits(forged.policy.max_target)
        header = mine(BlockHeader(1, prev, root, 1_700_000_000 + i, bits, 0))
        headers.append(header.marshal())
        prev = header.hash()

    def place(raw: bytes, block: list[bytes]) -> dict[str, Any]:
        txids = [sha256d(tx) for tx in block]
        index = block.index(raw)
        return {
            "transaction": raw.hex(),
            "txid": txids[index][::-1].hex(),
            "tx_index": index,
            "merkle_path": [h.hex() for h in merkle_path(txids, index)],
        }

    bundle = json.loads(json.dumps(good))
    bundle["anchor"].update(place(anchor_raw, blocks[0]), headers=[h.hex() for h in headers])
    bundle["contract"].update(place(contract_raw, blocks[contract_header]))
    bundle["contract"].update(header_index=contract_header, **(window or {}))
    return bundle


def codec_cases(forged: Forged) -> Iterator[Case]:
    """Corners of the transaction, header, entry and receipt codecs and of the window."""
    good = forged.bundle.to_json()
    p = forged.policy
    keymr = forged.bundle.receipt.directory_block_keymr
    payload = encode_anchor_payload(1, keymr)

    def obj(name: str, value: Any, policy: TrustPolicy = p) -> Case:
        return Case(name, _text(value), DOCUMENT, policy)

    def anchored(*scripts: bytes) -> bytes:
        return anchor_transaction(scripts).marshal()

    yield obj(
        "contract in header 1",
        rebuilt(forged, contract_header=1),
        replace(p, confirmations=2),
    )
    yield obj("contract in header 1, 3 confirmations", rebuilt(forged, contract_header=1))
    yield obj("header_index = header count", put(good, ("contract", "header_index"), 3))
    yield obj(
        "Fa payload of 41 bytes",
        rebuilt(forged, anchor_tx=anchored(b"\x6a\x29" + payload + b"\x00")),
    )
    yield obj(
        "Fa payload by OP_PUSHDATA1", rebuilt(forged, anchor_tx=anchored(b"\x6a\x4c\x28" + payload))
    )
    yield obj(
        "Fa push longer than its data", rebuilt(forged, anchor_tx=anchored(b"\x6a\x29" + payload))
    )
    yield obj(
        "Fa after another output",
        rebuilt(forged, anchor_tx=anchored(b"\x6a\x01\x00", b"\x6a\x28" + payload)),
    )
    two_wrong = anchored(*(b"\x6a\x28" + encode_anchor_payload(h, keymr) for h in (2, 0)))
    yield obj("Fa of heights 2 and 0", rebuilt(forged, anchor_tx=two_wrong))
    yield obj(
        "Fa of height 2 first",
        rebuilt(
            forged,
            anchor_tx=anchored(
                b"\x6a\x28" + encode_anchor_payload(2, keymr), b"\x6a\x28" + payload
            ),
        ),
    )
    keymrs = [k for k in _window_keymrs(forged)]
    swapped = [keymrs[1], keymrs[0], keymrs[2]]
    commitment = WindowCommitment(CONTRACT, 0, 2, window_root(swapped))
    window = {
        "windowmr": commitment.window_mr.hex(),
        "merklebranch": [n.to_json() for n in merkle_branch(swapped, 0)],
    }
    contract_tx = anchored(op_return_script(commitment.payload()))
    yield obj("window in the wrong order", rebuilt(forged, contract_tx=contract_tx, window=window))
    later = WindowCommitment(CONTRACT, 2, 2, keymrs[2])
    window = {"dbheightmin": 2, "dbheightmax": 2, "windowmr": keymrs[2].hex(), "merklebranch": []}
    contract_tx = anchored(op_return_script(later.payload()))
    cut_window = put(good, ("contract", "merklebranch"), good["contract"]["merklebranch"][:1])
    yield obj("window branch cut", cut_window)
    yield obj("hash just over its target", put(good, ("anchor", "headers", 2), _just_missed(good)))
    yield obj("window after the height", rebuilt(forged, contract_tx=contract_tx, window=window))
    branch = good["receipt"]["merklebranch"]
    at = next(i for i, n in enumerate(branch) if n["top"] == good["receipt"]["entryblockkeymr"])
    cut = put(good, ("receipt", "merklebranch"), branch[: at + 1])
    cut = put(cut, ("receipt", "directoryblockkeymr"), good["receipt"]["entryblockkeymr"])
    yield obj("receipt cut at the entry block", cut)
    above = put(good, ("receipt", "merklebranch"), branch[: at + 2])
    above = put(above, ("receipt", "directoryblockkeymr"), branch[at + 1]["top"])
    yield obj("receipt cut one node above the entry block", above)
    no_inputs = bytes.fromhex("010000000001" + "00" * 8 + "00" + "00000000")
    long_count = bytes.fromhex("01000000fd0100") + bytes.fromhex(good["anchor"]["transaction"])[5:]
    huge = anchor_transaction([b"\x6a" + b"\x00" * 100_000]).marshal()
    for name, tx in [
        ("tx without inputs", no_inputs),
        ("tx count not shortest", long_count),
        ("tx over 100000 bytes", huge),
    ]:
        yield obj(name, put(good, ("anchor", "transaction"), tx.hex()))
    last = BlockHeader.unmarshal(bytes.fromhex(good["anchor"]["headers"][2]))
    for name, bits in [
        ("bits with the sign bit", 0x1D800000),
        ("bits of target zero", 0x1D000000),
        ("bits of a target over 2**256", 0x23000001),
    ]:
        weird = BlockHeader(last.version, last.prev_hash, last.merkle_root, last.timestamp, bits, 0)
        yield obj(name, put(good, ("anchor", "headers", 2), weird.marshal().hex()))
    big_entry = Entry(
        CHAIN_ID, (hashlib.sha256(DOCUMENT).hexdigest().encode(),), b"x" * 10174
    ).marshal()
    yield obj("entry payload of 10241 bytes", put(good, ("entry", "raw"), (big_entry + b"y").hex()))
    yield obj("entry payload of 10240 bytes", put(good, ("entry", "raw"), big_entry.hex()))


def _just_missed(good: dict[str, Any]) -> str:
    """The last header with a nonce whose hash is over its target, but under twice it."""
    last = BlockHeader.unmarshal(bytes.fromhex(good["anchor"]["headers"][-1]))
    target = last.target()
    for nonce in range(1 << 32):
        header = BlockHeader(
            last.version, last.prev_hash, last.merkle_root, last.timestamp, last.bits, nonce
        )
        if target < int.from_bytes(header.hash(), "little") <= 2 * target:
            return header.marshal().hex()
    raise AssertionError("no nonce found")


def _window_keymrs(forged: Forged) -> list[bytes]:
    entry = document_entry(DOCUMENT)
    blocks, _ = _dblocks(entry)
    return [b.key_mr() for b in blocks]
