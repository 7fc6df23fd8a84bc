"""Hostile bytes, text and JSON into every decoder of the ledger's wire formats.

Property, for each decoder (one ``Codec`` row each in ``decoder_codecs.py``): any input
either decodes, or raises the decoder's own typed error (the ``ledger.core.errors`` classes
its docstring names).
``IndexError``, ``struct.error``, a bare ``ValueError``, ``RecursionError`` or anything else
leaking out is a failure. Inputs are arbitrary values and mutations of valid encodings (bit
flips, truncations, extensions, inserted, deleted and overwritten runs); a mutation that
still decodes must re-encode to something that decodes to the same value (and, where the
format is strict, to the very same bytes). Valid encodings round-trip.

Valid encodings come from the generators the per-module tests already define; what this
module adds is the leak and mutation checks across all decoders in one place, so a new
decoder is one more row in a table.

``MAX_EXAMPLES`` examples per (decoder, property); ``-m slow`` runs ``SLOW_EXAMPLES``.
"""

from __future__ import annotations

import copy
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ledger.core.anchor_record import (
    CONTRACT_CHAIN_ID,
    POW_ANCHOR_CHAIN_ID,
    AnchorRecord,
    parse_signed_record,
)
from ledger.core.entry import Entry
from ledger.core.errors import (
    DecodeError,
    LimitError,
    MerkleProofError,
)
from ledger.core.pow.header import bits_to_target
from ledger.core.pow.merkle import root_from_path
from ledger.core.pow.tx import op_return_data
from ledger.core.proof.steps import ProofError, Step
from ledger.core.proof.verify import verify_bundle
from tests.reliability.decoder_codecs import (
    BYTE_CODECS,
    JSON_CODECS,
    KEY,
    TEXT_CODECS,
    Codec,
    anchor_records,
    codec_ids,
    forged,
    uint32,
)

MAX_EXAMPLES = 120
SLOW_EXAMPLES = 3_000


def fuzz(max_examples: int = MAX_EXAMPLES) -> settings:
    """Hypothesis settings of this module (no deadline: the 2-core CI machine is shared)."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# -- mutations -------------------------------------------------------------------------


def mutate_bytes(data: st.DataObject, raw: bytes) -> bytes:
    """One to three random edits of ``raw``: flip, truncate, extend, insert, delete, overwrite."""
    out = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        kind = data.draw(
            st.sampled_from(["flip", "truncate", "extend", "insert", "delete", "overwrite"]),
            label="edit",
        )
        at = data.draw(st.integers(0, len(out)), label="at")
        if kind == "flip" and out:
            at = min(at, len(out) - 1)
            out[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif kind == "truncate":
            del out[at:]
        elif kind == "extend":
            out += data.draw(st.binary(min_size=1, max_size=40), label="tail")
        elif kind == "insert":
            out[at:at] = data.draw(st.binary(min_size=1, max_size=40), label="inserted")
        elif kind == "delete":
            del out[at : at + data.draw(st.integers(1, 40), label="deleted")]
        else:
            chunk = data.draw(st.binary(min_size=1, max_size=8), label="overwrite")
            out[at : at + len(chunk)] = chunk
    return bytes(out)


_ODD_CHARS = st.sampled_from(list("0OIl+/=_ \n\x00\u00e9\u0661\U0001f600" + string.hexdigits))


def mutate_text(data: st.DataObject, text: str) -> str:
    """One to three edits of ``text``: replace, insert, delete a character, truncate, extend."""
    chars = list(text)
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        kind = data.draw(st.sampled_from(["replace", "insert", "delete", "truncate", "extend"]))
        at = data.draw(st.integers(0, len(chars)), label="at")
        char = data.draw(_ODD_CHARS | st.characters(), label="char")
        if kind == "replace" and chars:
            chars[min(at, len(chars) - 1)] = char
        elif kind == "insert":
            chars.insert(at, char)
        elif kind == "delete" and chars:
            del chars[min(at, len(chars) - 1)]
        elif kind == "truncate":
            del chars[at:]
        else:
            chars += data.draw(st.text(min_size=1, max_size=10), label="tail")
    return "".join(chars)


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.sampled_from(["", "00", "0x", "zz", "ab" * 32, "AB" * 32, "ab" * 31, "0x" + "ab" * 20])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(obj, dict):
        for key, value in obj.items():
            found += _paths(value, (*path, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            found += _paths(value, (*path, index))
    return found


def mutate_json(data: st.DataObject, obj: Any) -> Any:
    """A copy of ``obj`` with one node replaced by junk, removed, or its text mutated."""
    obj = copy.deepcopy(obj)
    path = data.draw(st.sampled_from(_paths(obj)), label="path")
    if not path:
        return data.draw(json_values, label="replacement")
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    kind = data.draw(st.sampled_from(["replace", "remove", "text"]), label="edit")
    if kind == "remove":
        del parent[last]
    elif kind == "text" and isinstance(parent[last], str):
        parent[last] = mutate_text(data, parent[last])
    else:
        parent[last] = data.draw(json_values, label="replacement")
    return obj


# -- the property ----------------------------------------------------------------------


def check(codec: Codec, encoded: Any) -> Any:
    """Decode ``encoded``: a value, or None after one of the codec's typed errors."""
    try:
        value = codec.decode(encoded)
    except codec.errors as exc:
        event(f"refused: {type(exc).__name__}")
        return None
    except Exception as exc:  # the property under test: nothing else may leave
        pytest.fail(f"{codec.name} leaked {type(exc).__name__}: {exc!r:.300} for {encoded!r:.300}")
    event("decoded")
    if codec.then is not None:
        try:
            codec.then(value)
        except codec.then_errors as exc:
            event(f"check refused: {type(exc).__name__}")
        except Exception as exc:
            pytest.fail(
                f"{codec.name} check leaked {type(exc).__name__}: {exc!r:.300} for {encoded!r:.300}"
            )
    return value


def check_consistent(codec: Codec, encoded: Any, value: Any) -> None:
    """An input that decoded re-encodes to the same value (and bytes, if strict)."""
    if codec.encode is None or value is None:
        return
    again = codec.encode(value)
    if codec.strict:
        assert again == encoded, f"{codec.name}: accepted a non-canonical encoding"
    assert codec.decode(again) == value


@pytest.mark.parametrize("codec", BYTE_CODECS, ids=codec_ids(BYTE_CODECS))
@fuzz()
@given(data=st.data())
def test_arbitrary_bytes(codec: Codec, data: st.DataObject) -> None:
    raw = data.draw(st.binary(max_size=600), label="raw")
    check_consistent(codec, raw, check(codec, raw))


@pytest.mark.parametrize("codec", BYTE_CODECS, ids=codec_ids(BYTE_CODECS))
@fuzz()
@given(data=st.data())
def test_mutated_bytes(codec: Codec, data: st.DataObject) -> None:
    valid = data.draw(codec.valid, label="valid")
    raw = mutate_bytes(data, valid)
    check_consistent(codec, raw, check(codec, raw))


@pytest.mark.parametrize("codec", TEXT_CODECS, ids=codec_ids(TEXT_CODECS))
@fuzz()
@given(data=st.data())
def test_arbitrary_and_mutated_text(codec: Codec, data: st.DataObject) -> None:
    if data.draw(st.booleans(), label="arbitrary"):
        text = data.draw(st.text(max_size=120), label="text")
    else:
        text = mutate_text(data, data.draw(codec.valid, label="valid"))
    check_consistent(codec, text, check(codec, text))


@pytest.mark.parametrize("codec", JSON_CODECS, ids=codec_ids(JSON_CODECS))
@fuzz()
@given(data=st.data())
def test_arbitrary_and_mutated_json(codec: Codec, data: st.DataObject) -> None:
    if data.draw(st.booleans(), label="arbitrary"):
        obj = data.draw(json_values, label="json")
    else:
        obj = mutate_json(data, data.draw(codec.valid, label="valid"))
    check_consistent(codec, obj, check(codec, obj))


@pytest.mark.parametrize(
    "codec",
    [*BYTE_CODECS, *TEXT_CODECS, *JSON_CODECS],
    ids=codec_ids([*BYTE_CODECS, *TEXT_CODECS, *JSON_CODECS]),
)
@fuzz(max_examples=40)
@given(data=st.data())
def test_valid_encodings_round_trip(codec: Codec, data: st.DataObject) -> None:
    encoded = data.draw(codec.valid, label="valid")
    value = codec.decode(encoded)
    if codec.encode is not None:
        again = codec.encode(value)
        assert codec.decode(again) == value
        if codec.strict:
            assert again == encoded


@pytest.mark.parametrize(
    ("codec", "raw"),
    [
        ("anchor-record", b"[" * 100_000),
        ("anchor-record", b'{"Ethereum":' * 5_000),
        ("proof-bundle-text", b"[" * 100_000),
        ("proof-bundle-text", b"\xff\xfe\x00"),
        ("proof-bundle-text", b"1" * 10_000),
    ],
)
def test_pathological_json_text_is_a_typed_error(codec: str, raw: bytes) -> None:
    """Deep nesting and oversized numbers: the typed error, not RecursionError/ValueError."""
    chosen = next(c for c in BYTE_CODECS if c.name == codec)
    with pytest.raises(chosen.errors):
        chosen.decode(raw)


def test_bundle_whose_entry_content_nests_deeply_fails_at_a_step() -> None:
    """``verify_bundle`` reads the entry content as JSON: deep nesting must not escape."""
    bundle = forged().bundle
    entry = Entry.unmarshal(bundle.entry)
    hostile = Entry(entry.chain_id, (), b"[" * 9_000)
    obj = bundle.to_json()
    obj["entry"]["raw"] = hostile.marshal().hex()
    with pytest.raises(ProofError) as caught:
        verify_bundle(obj, policy=forged().policy)
    assert caught.value.step == Step.ENTRY


def test_bundle_with_a_directory_block_from_the_far_future_is_checked_not_crashed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A consistent bundle whose directory block says minute 2**32-1 (year 10136): the
    report of step 6 must not raise ``ValueError`` from the date conversion."""
    import tests.ledger.anchor.bundles as bundles

    monkeypatch.setattr(bundles, "START_MIN", 2**32 - 21)
    far = bundles.forge_bundle(difficulty_bits=8, headers=3)
    steps: list[int] = []
    verify_bundle(far.bundle, policy=far.policy, on_step=lambda report: steps.append(report.step))
    assert steps == list(Step)


# -- the remaining pure decoders of the anchor chain -----------------------------------


@fuzz()
@given(
    txid=st.binary(max_size=40),
    index=st.integers(-(2**70), 2**70),
    path=st.lists(st.binary(max_size=40), max_size=8),
)
def test_merkle_path_of_any_shape_is_a_root_or_a_proof_error(
    txid: bytes, index: int, path: list[bytes]
) -> None:
    try:
        root = root_from_path(txid, index, path)
    except MerkleProofError:
        return
    assert len(root) == 32 or not path


@fuzz()
@given(bits=st.integers(-(2**40), 2**40) | uint32)
def test_compact_target_of_any_integer_is_a_target_or_a_limit_error(bits: int) -> None:
    try:
        target = bits_to_target(bits)
    except LimitError:
        return
    assert 0 < target < 2**256


@fuzz()
@given(script=st.binary(max_size=300))
def test_op_return_data_never_raises(script: bytes) -> None:
    data = op_return_data(script)
    assert data is None or (script[0] == 0x6A and script.endswith(data))


@fuzz()
@given(
    content=st.binary(max_size=400) | anchor_records().map(AnchorRecord.to_content),
    contract=st.booleans(),
)
def test_signed_records_in_either_chain(content: bytes, contract: bool) -> None:
    """A trusted signature over hostile content, in either anchor chain: parse or DecodeError."""
    chain = CONTRACT_CHAIN_ID if contract else POW_ANCHOR_CHAIN_ID
    entry = Entry(chain, (KEY.sign(content),), content)
    try:
        record = parse_signed_record(entry, [KEY.public_key])
    except DecodeError:
        return
    assert (record.contract is not None) == contract


@pytest.mark.slow
@pytest.mark.parametrize("codec", BYTE_CODECS, ids=codec_ids(BYTE_CODECS))
@fuzz(max_examples=SLOW_EXAMPLES)
@given(data=st.data())
def test_mutated_bytes_long_run(codec: Codec, data: st.DataObject) -> None:
    valid = data.draw(codec.valid, label="valid")
    raw = mutate_bytes(data, valid)
    check_consistent(codec, raw, check(codec, raw))
