"""Version-2 bundles and the duplicated-node positions, for the page's browser tests.

Like ``cases.py`` (whose ``Case`` and verdict helpers these reuse): every case is a bundle
text, a document and a policy, decided by the Python verifier, which the page must match.
The cases are the version-2 tamper suite (``tests/ledger/core/test_proof_v2.py``): a
flipped bit in every byte of both kinds of version-2 bundle, the leaf index, tree size and
audit path forged every way, swapped entry kinds and relabelled versions, entries whose
external IDs almost state a value, JSON readings of the new fields; the CVE-2012-2459
positions one past an odd block's end; and seeded random mutations of version-2 bundles.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ledger.core.aggregation import AggregationTree, leaf_hash
from ledger.core.entry import Entry
from ledger.core.notary_entry import BATCH_TAG, COMMITMENT_TAG, batch_entry, commitment_entry
from tests.browser.cases import Case, flipped_byte_cases, fuzz_cases
from tests.ledger.anchor.bundles import (
    DOCUMENT,
    PRIVATE_CHAIN_ID,
    Forged,
    batch_leaves,
    commitment_of,
    forge_bundle,
)
from tests.ledger.core.test_proof import put


def _text(obj: Any) -> bytes:
    return json.dumps(obj, indent=2).encode()


def v2_bundles() -> dict[str, Forged]:
    """The version-2 bundles the cases start from, by name."""
    return {
        "aggregated": forge_bundle(private="aggregated", batch_size=5, leaf_index=3),
        "document": forge_bundle(private="document"),
    }


def v2_cases(bundles: dict[str, Forged]) -> Iterator[Case]:
    """Every version-2 case (module docstring), fuzzing aside."""
    for kind, forged in bundles.items():
        yield from _kind_cases(kind, forged)
    yield from _aggregation_forgeries(bundles["aggregated"])
    yield from _swapped_kinds(bundles)


def _kind_cases(kind: str, forged: Forged) -> Iterator[Case]:
    good = forged.bundle.to_json()

    def case(name: str, obj: Any, document: bytes | None = DOCUMENT) -> Case:
        return Case(f"v2 {kind}: {name}", _text(obj), document, forged.policy)

    yield case("valid", good)
    yield case("valid, no file", good, None)
    yield from flipped_byte_cases(good, case)
    yield from _private_fields(good, case)
    yield from _entries_almost_stating(forged, good, case)


def _private_fields(good: dict[str, Any], case: Any) -> Iterator[Case]:
    nonce = good["commitment"]["nonce"]
    for name, value in [
        ("nonce of 31 bytes", nonce[:62]),
        ("nonce of 33 bytes", nonce + "00"),
        ("nonce empty", ""),
        ("nonce 0x", "0x" + nonce),
        ("nonce upper case", nonce.upper()),
        ("nonce not hex", "zz" + nonce[2:]),
        ("nonce a number", 7),
        ("nonce null", None),
    ]:
        yield case(name, put(good, ("commitment", "nonce"), value))
    no_nonce = put(good, ("commitment",), {})
    yield case("commitment without nonce", no_nonce)
    for name, value in [("null", None), ("a list", []), ("a string", nonce)]:
        yield case(f"commitment {name}", put(good, ("commitment",), value))
    without = {k: v for k, v in good.items() if k != "commitment"}
    yield case("no commitment", without)
    without = {k: v for k, v in good.items() if k != "aggregation"}
    yield case("no aggregation key", without)
    for name, value in [("false", False), ("a list", []), ("empty object", {}), ("0", 0)]:
        yield case(f"aggregation {name}", put(good, ("aggregation",), value))
    yield case("relabelled version 1", put(good, ("version",), 1))
    yield case("version 2.0", put(good, ("version",), 2.0))
    yield case("version true", put(good, ("version",), True))
    yield case("version 3", put(good, ("version",), 3))
    yield case("unknown keys", {**good, "aggregation_note": {"x": [1.5, None]}})


def _entries_almost_stating(forged: Forged, good: dict[str, Any], case: Any) -> Iterator[Case]:
    """Entries whose external IDs nearly state a commitment, root or size: only the exact
    form counts at steps 2-3 (``document_steps._stated``); the rest is left to step 4."""
    _, commitment = commitment_of(DOCUMENT)
    tree_root = AggregationTree(list(forged.leaves)).root if forged.leaves else commitment
    value = (commitment if not forged.leaves else tree_root).hex()
    chain = PRIVATE_CHAIN_ID
    variants: dict[str, tuple[bytes, ...]] = {
        "commitment tag, upper-case hex": (COMMITMENT_TAG, commitment.hex().upper().encode()),
        "commitment tag, hex of 62": (COMMITMENT_TAG, commitment.hex()[:62].encode()),
        "commitment tag, another commitment": (
            COMMITMENT_TAG,
            leaf_hash(commitment).hex().encode(),
        ),
        "commitment tag, three IDs": (COMMITMENT_TAG, commitment.hex().encode(), b"1"),
        "batch tag, the root, size 5": (BATCH_TAG, value.encode(), b"5"),
        "batch tag, the root, size 05": (BATCH_TAG, value.encode(), b"05"),
        "batch tag, the root, size 6": (BATCH_TAG, value.encode(), b"6"),
        "batch tag, the root, size 0": (BATCH_TAG, value.encode(), b"0"),
        "batch tag, the root, size of 40 digits": (BATCH_TAG, value.encode(), b"9" * 40),
        "batch tag, the root, size of 41 digits": (BATCH_TAG, value.encode(), b"9" * 41),
        "batch tag, the root, size 5 with a space": (BATCH_TAG, value.encode(), b"5 "),
        "batch tag, another root, size 5": (BATCH_TAG, leaf_hash(tree_root).hex().encode(), b"5"),
        "batch tag, two IDs": (BATCH_TAG, value.encode()),
        "v1 document tag": (b"notary:document:v1", value.encode()),
    }
    for name, ext_ids in variants.items():
        raw = Entry(chain, ext_ids, b"{}").marshal()
        yield case(f"entry {name}", put(good, ("entry", "raw"), raw.hex()))
    yield case("entry that does not parse", put(good, ("entry", "raw"), "00" * 34))


def _aggregation_forgeries(forged: Forged) -> Iterator[Case]:
    good = forged.bundle.to_json()
    path = good["aggregation"]["audit_path"]

    def agg(name: str, index: Any, size: Any, audit: Any) -> Case:
        value = {"leaf_index": index, "tree_size": size, "audit_path": audit}
        return Case(
            f"v2 aggregation: {name}",
            _text(put(good, ("aggregation",), value)),
            DOCUMENT,
            forged.policy,
        )

    for index in [0, 1, 2, 4, 5, 8, 1 << 40, 1 << 64]:
        yield agg(f"leaf index {index}", index, 5, path)
    for size in [0, 1, 2, 3, 4, 6, 7, 8, 9, 16, 1 << 40, (1 << 40) + 1, 1 << 70]:
        yield agg(f"tree size {size}", 3, size, path)
    for name, index, size in [
        ("float index", 3.0, 5),
        ("float size", 3, 5.0),
        ("bool index", True, 5),
    ]:
        yield agg(name, index, size, path)
    yield agg("negative index", -1, 5, path)
    yield agg("index a string", "3", 5, path)
    for size in range(4, 13):
        other = AggregationTree(batch_leaves(DOCUMENT, size=size, index=3)).audit_path(3)
        for stated in {5, size}:
            yield agg(f"path of a tree of {size} as {stated}", 3, stated, [h.hex() for h in other])
    for index, size, cut in [(1, 3, 1), (1, 5, 1), (0, 2, 2), (0, 5, 2), (0, 1, 3)]:
        yield agg(f"interior node as leaf {index} of {size}", index, size, path[cut:])
    yield agg("path one short", 3, 5, path[:-1])
    yield agg("path one long", 3, 5, [*path, path[0]])
    yield agg("path empty", 3, 5, [])
    yield agg("path not a list", 3, 5, path[0])
    yield agg("path element of 31 bytes", 3, 5, [path[0][:62], *path[1:]])
    yield agg("path element 0x", 3, 5, ["0x" + path[0], *path[1:]])
    yield agg("path element upper case", 3, 5, [path[0].upper(), *path[1:]])
    yield agg("path element a number", 3, 5, [1, *path[1:]])
    yield agg("path reversed", 3, 5, path[::-1])


def _swapped_kinds(bundles: dict[str, Forged]) -> Iterator[Case]:
    _, commitment = commitment_of(DOCUMENT)
    as_batch = forge_bundle(
        private="document", entry=batch_entry(PRIVATE_CHAIN_ID, leaf_hash(commitment), 1)
    )
    single = forge_bundle(
        private="aggregated",
        batch_size=1,
        leaf_index=0,
        entry=commitment_entry(PRIVATE_CHAIN_ID, commitment),
    )
    batch_of_one = forge_bundle(private="aggregated", batch_size=1, leaf_index=0)
    for name, forged in [
        ("commitment bundle over a batch entry", as_batch),
        ("batch bundle over a commitment entry", single),
        ("a batch of one", batch_of_one),
    ]:
        yield Case(f"v2 swapped: {name}", _text(forged.bundle.to_json()), DOCUMENT, forged.policy)
    aggregated = bundles["aggregated"].bundle.to_json()
    document = bundles["document"].bundle.to_json()
    policy = bundles["aggregated"].policy
    claims = {"leaf_index": 0, "tree_size": 1, "audit_path": []}
    yield Case(
        "v2 swapped: per-document claimed as a batch",
        _text(put(document, ("aggregation",), claims)),
        DOCUMENT,
        policy,
    )
    yield Case(
        "v2 swapped: batch claimed as per-document",
        _text(put(aggregated, ("aggregation",), None)),
        DOCUMENT,
        policy,
    )
    v1 = forge_bundle().bundle.to_json()
    yield Case("v1 relabelled version 2", _text(put(v1, ("version",), 2)), DOCUMENT, policy)
    with_parts = {
        **put(v1, ("version",), 2),
        "commitment": {"nonce": commitment_of(DOCUMENT)[0].hex()},
        "aggregation": None,
    }
    yield Case("v1 relabelled version 2 with a nonce", _text(with_parts), DOCUMENT, policy)
    other = forge_bundle(private="aggregated", document=b"batch document 1", leaf_index=1)
    yield Case("v2 another document of the batch", _text(other.bundle.to_json()), DOCUMENT, policy)


def duplicated_position_cases() -> Iterator[Case]:
    """CVE-2012-2459: the anchor or window-anchor transaction, last of an odd block, with
    its index moved past the end (one past: only the duplicate is there; further: the path
    does not fit), in version-1 and version-2 bundles."""
    for where in ("anchor", "contract"):
        for private in (None, "aggregated"):
            forged = forge_bundle(last_in_odd_block=where, private=private)  # type: ignore[arg-type]
            good = forged.bundle.to_json()
            label = f"odd block, {where} last, {private or 'v1'}"
            yield Case(f"{label}: valid", _text(good), DOCUMENT, forged.policy)
            for moved in (3, 5, 6, 7, 8):
                bad = put(good, (where, "tx_index"), moved)
                yield Case(f"{label}: tx_index {moved}", _text(bad), DOCUMENT, forged.policy)


def v2_fuzz_cases(bundles: dict[str, Forged], count: int) -> Iterator[Case]:
    """Seeded random mutations of both version-2 bundles (``cases.fuzz_cases``)."""
    yield from fuzz_cases(bundles["aggregated"], count, seed=15)
    yield from fuzz_cases(bundles["document"], count // 2, seed=16)
