"""The page reads and checks OpenTimestamps stamps (``timestamps.opentimestamps``).

The real examples of opentimestamps-client (tests/vectors/opentimestamps/README.md, with
the header of Bitcoin block 358391) get the state that README gives for
``ledger.core.timestamps.ots.check_ots``; one-byte mutations of the proof and of the
header never verify the same claim; and a version-3 bundle carrying a pending stamp and a
stamp whose self-made header is below Bitcoin mainnet's least work shows both as such.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from ledger.core.proof.policy import SHIPPED, TrustPolicy
from ledger.core.timestamps.bundle_part import OtsStamp, TimestampsPart
from ledger.core.timestamps.ots import check_ots
from ledger.core.verify_page import render_verify_page
from tests.browser.test_verify_page import UI_STATE_JS, open_page
from tests.ledger.anchor.bundles import DOCUMENT, forge_bundle

VECTORS = Path(__file__).parents[1] / "vectors" / "opentimestamps"
HASH_358391 = "000000000000000003e892881a8cdcdc117c06d444057c98b6f04a9ee75a2319"
HEADER_358391 = bytes.fromhex((VECTORS / "block-358391.header.hex").read_text().strip())
MAGIC = b"\x00OpenTimestamps\x00\x00Proof\x00\xbf\x89\xe2\xe8\x84\xe8\x92\x94"
BITCOIN_TAG = bytes.fromhex("0588960d73d71901")
PENDING_TAG = bytes.fromhex("83dfe30d2ef90c8e")
#: Bitcoin mainnet's shipped policy, placing by its least work alone (no checkpoint set).
MAINNET = {**SHIPPED["bitcoin-mainnet"].to_json(), "checkpoints": None}
#: Bitcoin mainnet's genesis with a floor below block 358391's target: work places it.
EASY = {**MAINNET, "name": "mainnet-easy", "max_target": "00000000ffff" + "0" * 52}

CHECK_JS = """
(cases) => cases.map(([ots, root, headers, policy, given]) => {
  const b = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  const made = policy === null ? null : NotaryVerify.makePolicy(policy);
  const sets = Object.fromEntries(Object.entries(given || {}).map(
    ([name, [first, records]]) => [name, NotaryOts.readCheckpoints(name, first, records)]));
  const out = NotaryOts.checkOts({ots: b(ots), headers: headers.map(b)}, b(root), made, sets);
  return {state: out.state, heights: out.attestations.map((a) => a.height),
          hashes: out.attestations.map((a) => a.blockHash), reasons: out.reasons,
          pending: out.pending, bases: out.attestations.map((a) => a.basis),
          details: out.attestations.map((a) => a.reason)};
})
"""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _case(
    ots: bytes, root: bytes, headers: list[bytes], policy: Any, sets: Any = None
) -> list[Any]:
    return [_b64(ots), _b64(root), [_b64(h) for h in headers], policy, sets]


def _vector(name: str) -> tuple[bytes, bytes]:
    """The .ots bytes and the SHA-256 of the file beside it (its root)."""
    ots = (VECTORS / name).read_bytes()
    beside = VECTORS / name.removesuffix(".ots")
    return ots, hashlib.sha256(beside.read_bytes()).digest() if beside.exists() else bytes(32)


#: file, headers given, policy, state (the README's, under a policy without checkpoints).
TABLE = [
    ("hello-world.txt.ots", [HEADER_358391], EASY, "verified"),
    ("hello-world.txt.ots", [HEADER_358391], MAINNET, "unverifiable"),
    ("hello-world.txt.ots", [], EASY, "unverifiable"),
    ("hello-world.txt.ots", [HEADER_358391], None, "unverifiable"),
    ("bad-stamp.txt.ots", [HEADER_358391], EASY, "invalid"),
    ("empty.ots", [], EASY, "unverifiable"),
    ("different-blockchains.txt.ots", [], EASY, "unverifiable"),
    ("bitcoin.pdf.ots", [], EASY, "invalid"),
    ("incomplete.txt.ots", [], EASY, "pending"),
    ("merkle1.txt.ots", [], EASY, "pending"),
    ("merkle2.txt.ots", [], EASY, "pending"),
    ("merkle3.txt.ots", [], EASY, "pending"),
    ("two-calendars.txt.ots", [], EASY, "pending"),
    ("unknown-notary.txt.ots", [], EASY, "unverifiable"),
    ("known-and-unknown-notary.txt.ots", [], EASY, "pending"),
]


@pytest.fixture
def blank_page(page: Any, tmp_path: Path) -> Any:
    (tmp_path / "verify.html").write_text(render_verify_page(), encoding="utf-8")
    open_page(page, (tmp_path / "verify.html").as_uri())
    return page


def test_the_published_examples_get_their_states(blank_page: Any) -> None:
    cases = [_case(*_vector(name), headers, policy) for name, headers, policy, _ in TABLE]
    shown = blank_page.evaluate(CHECK_JS, cases)
    assert [s["state"] for s in shown] == [state for *_, state in TABLE]
    hello = shown[0]
    assert hello["heights"] == [358391]
    assert hello["hashes"] == [HASH_358391]
    assert shown[1]["reasons"] == [
        "Bitcoin block 358391 (000000000000000003e892881a8cdcdc117c06d444057c98b6f04a9ee75a2319):"
        " policy bitcoin-mainnet cannot place it: no checkpoints; and its work is below policy"
        " bitcoin-mainnet's least work per header"
    ]
    assert "not placed under a policy" in shown[3]["reasons"][0]
    assert shown[4]["reasons"][0].startswith("Merkle root mismatch: header 0000000000000000")
    assert shown[7]["reasons"] == ["the file-hash op is sha1, not sha256"]
    assert shown[8]["pending"] == ["https://alice.btc.calendar.opentimestamps.org"]
    assert blank_page.errors == []


def test_a_policy_naming_checkpoints_the_page_lacks_places_nothing(blank_page: Any) -> None:
    ots, root = _vector("hello-world.txt.ots")
    named = {**EASY, "checkpoints": "a-set-not-given"}
    [shown] = blank_page.evaluate(CHECK_JS, [_case(ots, root, [HEADER_358391], named)])
    assert shown["state"] == "unverifiable"
    assert "header checked, not placed under a policy" in shown["reasons"][0]


def _record(block_hash: bytes, bits: int, time_s: int) -> bytes:
    return block_hash + bits.to_bytes(4, "little") + time_s.to_bytes(4, "little")


def test_checkpoints_place_a_historic_header_by_hash_or_by_its_period(blank_page: Any) -> None:
    """The placement rules of ``Checkpoints.place`` on made-up sets around block 358391:
    its own hash (checkpoint), its period's bits and time window (era), other bits, and a
    height outside the set (then the least work decides, and refuses)."""
    ots, root = _vector("hello-world.txt.ots")
    hash_internal = bytes.fromhex(HASH_358391)[::-1]
    time_s = int.from_bytes(HEADER_358391[68:72], "little")
    bits = int.from_bytes(HEADER_358391[72:76], "little")
    day = 86_400
    period = _record(bytes(32), bits, time_s - 3 * day) + _record(b"\1" * 32, bits, time_s + day)
    sets = {
        "exact": [358391, _b64(_record(hash_internal, bits, time_s))],
        "era": [356832, _b64(period)],
        "other-bits": [356832, _b64(_record(bytes(32), bits + 1, time_s))],
        "early": [2016, _b64(_record(bytes(32), bits, time_s))],
    }
    cases = [
        _case(ots, root, [HEADER_358391], {**MAINNET, "checkpoints": name}, sets) for name in sets
    ]
    shown = blank_page.evaluate(CHECK_JS, cases)
    assert [s["state"] for s in shown] == ["verified", "verified", "unverifiable", "unverifiable"]
    assert [s["bases"] for s in shown] == [["checkpoint"], ["era"], [None], [None]]
    assert shown[1]["details"] == [
        "bits 0x181686f5 are those of its difficulty period (blocks 356832-358847, era):"
        " as costly to forge as one block of that period, about 2**67.5 hashes"
    ]
    assert shown[2]["details"][0].startswith(
        "policy bitcoin-mainnet cannot place it: bits 0x181686f5 are not those of block 358391's"
    )
    assert shown[3]["details"] == [
        "policy bitcoin-mainnet cannot place it: block 358391 is outside the early checkpoints"
        " (up to 4031); and its work is below policy bitcoin-mainnet's least work per header"
    ]


def test_following_headers_link_an_attested_header_to_the_next_checkpoint(
    blank_page: Any,
) -> None:
    """Checkpoints.link: the attested header (self-made, block 358847) and the one after it,
    whose hash a made-up set names as block 358848's checkpoint: placed by "chain"; without
    the following header, or with a set naming another hash, not placed."""
    root = bytes(range(32))
    ots, header = _mined_stamp(root, 358847)
    after = _mine(prev=_hash(header), merkle=bytes(32))
    period = _record(bytes(32), 0x207FFFFF, 0) + _record(_hash(after), 0x207FFFFF, 0)
    other = _record(bytes(32), 0x207FFFFF, 0) + _record(bytes(32), 0x207FFFFF, 0)
    sets = {"linked": [356832, _b64(period)], "other": [356832, _b64(other)]}
    policy = {**MAINNET, "checkpoints": "linked"}
    shown = blank_page.evaluate(
        CHECK_JS,
        [
            _case(ots, root, [header, after], policy, sets),
            _case(ots, root, [header], policy, sets),
            _case(ots, root, [header, after], {**policy, "checkpoints": "other"}, sets),
        ],
    )
    assert [s["state"] for s in shown] == ["verified", "unverifiable", "invalid"]
    assert shown[0]["bases"] == ["chain"]
    assert shown[0]["details"] == [
        "linked by 1 header(s) to the linked checkpoint at block 358848: it is that chain's"
        " block 358847"
    ]
    assert shown[2]["reasons"][0].startswith("Merkle root mismatch: header ")


def test_one_byte_mutations_never_verify_another_claim(blank_page: Any) -> None:
    """Every byte of the proof and of the header, one bit flipped: none verifies another
    block. What may still verify is the same block: a flipped height (the proof's claim,
    not the header's) or ``append`` <-> ``prepend`` of a Merkle sibling equal to the node
    itself (Bitcoin pairs an odd level's last txid with itself), as the Python tests of
    ``check_ots`` on the same vector find."""
    ots, root = _vector("hello-world.txt.ots")
    cases = []
    for at in range(len(ots)):
        mutated = bytearray(ots)
        mutated[at] ^= 0x01
        cases.append(_case(bytes(mutated), root, [HEADER_358391], EASY))
    for at in range(len(HEADER_358391)):
        header = bytearray(HEADER_358391)
        header[at] ^= 0x01
        cases.append(_case(ots, root, [bytes(header)], EASY))
    shown = blank_page.evaluate(CHECK_JS, cases)
    verified = [s for s in shown if s["state"] == "verified"]
    assert all(s["hashes"] == [HASH_358391] for s in verified)
    assert len(verified) == 4  # the three bytes of the height, one append <-> prepend
    assert not any(s["state"] == "verified" for s in shown[len(ots) :])
    assert len(shown) == 688 + 80


def test_trailing_bytes_and_a_non_canonical_file_are_invalid(blank_page: Any) -> None:
    ots, root = _vector("hello-world.txt.ots")
    padded = _pending_ots(root) + b"\x00"
    doubled = _pending_ots(root, twice=True)
    shown = blank_page.evaluate(
        CHECK_JS, [_case(ots + b"\x00", root, [], EASY), _case(padded, root, [], EASY),
                   _case(doubled, root, [], EASY)],
    )  # fmt: skip
    assert [s["state"] for s in shown] == ["invalid"] * 3
    assert shown[2]["reasons"] == ["not the canonical serialization of its timestamp"]


# -- a bundle that carries stamps ---------------------------------------------------------------


def _varuint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _varbytes(data: bytes) -> bytes:
    return _varuint(len(data)) + data


def _pending_ots(root: bytes, *, twice: bool = False) -> bytes:
    """A .ots over ``root`` with one calendar's promise (the same one twice: not canonical)."""
    attestation = PENDING_TAG + _varbytes(
        _varbytes(b"https://alice.btc.calendar.opentimestamps.org")
    )
    tree = (b"\xff\x00" + attestation if twice else b"") + b"\x00" + attestation
    return MAGIC + b"\x01\x08" + root + tree


def _hash(header: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(header).digest()).digest()


def _mined_stamp(root: bytes, height: int) -> tuple[bytes, bytes]:
    """A .ots over ``root`` (one SHA-256 op, then a Bitcoin attestation) and a header of our
    own making whose Merkle root is that op's result and which meets its own easy bits."""
    ots = MAGIC + b"\x01\x08" + root + b"\x08\x00" + BITCOIN_TAG + _varbytes(_varuint(height))
    return ots, _mine(prev=bytes(32), merkle=hashlib.sha256(root).digest())


def _mine(*, prev: bytes, merkle: bytes) -> bytes:
    """An 80-byte header meeting its own easy bits (0x207fffff)."""
    bits = 0x207FFFFF
    target = 0x7FFFFF << (8 * (0x20 - 3))
    for nonce in range(1000):
        header = (
            (4).to_bytes(4, "little") + prev + merkle
            + (1_700_000_000).to_bytes(4, "little") + bits.to_bytes(4, "little")
            + nonce.to_bytes(4, "little")
        )  # fmt: skip
        if int.from_bytes(_hash(header), "little") <= target:
            return header
    raise AssertionError("no nonce found")


def test_a_bundle_shows_its_pending_and_unplaced_stamps(page: Any, tmp_path: Path) -> None:
    forged = forge_bundle()
    keymr = forged.bundle.receipt.directory_block_keymr
    ots, header = _mined_stamp(keymr, 900_000)
    bundle = forged.bundle.to_json()
    bundle["version"] = 3
    bundle["commitment"] = None
    bundle["aggregation"] = None
    bundle["timestamps"] = TimestampsPart(keymr, ()).to_json()
    bundle["timestamps"]["opentimestamps"] = [
        {"ots": _b64(_pending_ots(keymr)), "headers": []},
        {"ots": _b64(ots), "headers": [header.hex()]},
    ]
    (tmp_path / "report.txt").write_bytes(DOCUMENT)
    path = tmp_path / "report.txt.proof.json"
    path.write_text(json.dumps(bundle, indent=2, sort_keys=True))
    page_file = tmp_path / "verify.html"
    page_file.write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    open_page(page, page_file.as_uri())
    page.set_input_files("#bundle-input", str(path))
    page.set_input_files("#document-input", str(tmp_path / "report.txt"))
    page.wait_for_selector("#result[data-state=done]")
    shown = page.evaluate(UI_STATE_JS)
    lines = page.evaluate(
        """() => [...document.querySelectorAll("#timestamp-list li")].map((li) =>
             [li.dataset.kind, li.dataset.status, li.querySelector(".text").textContent])"""
    )
    assert shown["verdict"] == "pass", shown
    assert lines[0] == [
        "opentimestamps",
        "pending",
        "OpenTimestamps proof 1: pending: calendars' promises only"
        " (https://alice.btc.calendar.opentimestamps.org); never verified",
    ]
    assert lines[1][:2] == ["opentimestamps", "unverifiable"]
    assert "Bitcoin block 900000 (" in lines[1][2]
    assert "below policy bitcoin-mainnet's least work per header" in lines[1][2]
    assert "OpenTimestamps: 1 unverifiable, 1 pending (see below)." in shown["detail"]
    page.evaluate("() => document.activeElement.blur()")
    page.screenshot(path=str(tmp_path / "verify-page-ots.png"), full_page=True)
    assert page.errors == []


def _page_sets() -> dict[str, list[Any]]:
    """The checkpoint sets the rendered page carries, in CHECK_JS's form."""
    html = render_verify_page()
    config = json.loads(html.split('id="notary-page-config">', 1)[1].split("</script>", 1)[0])
    return {name: [c["first"], c["records"]] for name, c in config["checkpoints"].items()}


@pytest.fixture
def agreement_cases() -> list[tuple[str, OtsStamp, bytes, TrustPolicy]]:
    shipped = SHIPPED["bitcoin-mainnet"]
    bare = dataclasses.replace(shipped, checkpoints=None)
    cases = []
    for name, headers, _, _ in TABLE:
        ots, root = _vector(name)
        for policy in (shipped, bare):
            cases.append(
                (f"{name} {policy.checkpoints}", OtsStamp(ots, tuple(headers)), root, policy)
            )
    ots, root = _vector("hello-world.txt.ots")
    for at in random.Random(1).sample(range(len(ots)), 40):
        mutated = bytearray(ots)
        mutated[at] ^= 0x01
        cases.append((f"byte {at}", OtsStamp(bytes(mutated), (HEADER_358391,)), root, shipped))
    mined_root = bytes(range(32))
    mined, header = _mined_stamp(mined_root, 900_000)
    cases.append(("self-mined", OtsStamp(mined, (header,)), mined_root, shipped))
    return cases


def test_python_and_the_page_agree_on_every_vector(
    blank_page: Any, agreement_cases: list[tuple[str, OtsStamp, bytes, TrustPolicy]]
) -> None:
    """Table-driven: each case checked by ``check_ots`` and by the page under the same
    policy (the shipped bitcoin-mainnet with its checkpoints, and the same without them),
    with the checkpoint set the page is rendered with: same state, heights, block hashes,
    placement basis and sentence."""
    sets = _page_sets()
    page_cases = [
        _case(s.ots, root, list(s.headers), p.to_json(), sets) for _, s, root, p in agreement_cases
    ]
    shown = blank_page.evaluate(CHECK_JS, page_cases)
    for (name, stamp, root, policy), js in zip(agreement_cases, shown, strict=True):
        py = check_ots(stamp, root, policy=policy)
        assert js["state"] == py.state, (name, py, js)
        assert js["heights"] == list(py.heights), name
        assert js["bases"] == [a.basis for a in py.attestations], name
        assert js["hashes"] == [
            None if a.block_hash is None else a.block_hash[::-1].hex() for a in py.attestations
        ], name
        assert js["details"] == [a.reason for a in py.attestations], name
    assert shown[0]["state"] == "verified" and shown[0]["bases"] == ["era"]
    assert blank_page.errors == []
