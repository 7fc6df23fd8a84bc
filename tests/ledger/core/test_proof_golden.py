"""The golden version-1 proof bundle on disk, and its named mutations.

``tests/vectors/proof_bundle_v1.json`` holds a bundle, the document it proves and the
policy it needs; ``proof_bundle_v1_mutations.json`` a list of named changes, each with the
one step that must catch it. Both files are data written once and never regenerated here,
so an encoder and a decoder changed together cannot pass: the bytes are fixed.

Mutation ops (``path`` is a list of keys and indexes into the bundle JSON):

- ``none``: the bundle as it is;
- ``flip_bit``: flip bit ``bit`` of byte ``byte`` of the hex string at ``path``;
- ``set``: put ``value`` at ``path``; ``delete``: remove ``path``;
- ``append_hex``: append ``value`` (hex) to the hex string at ``path``;
- ``truncate``: keep the first ``length`` items of the list at ``path``;
- ``append_text``: append ``value`` to the bundle's JSON text.

``document_hex`` (null: no file) and ``policy`` (fields to change) replace the verifier's
other inputs. ``fails_at`` names a ``Step``, or is null when the bundle must verify.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from ledger.core.pow.params import PowParams
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.proof.verify import verify_bundle
from tests.ledger.core._vectors import load

GOLDEN = load("proof_bundle_v1.json")
MUTATIONS = load("proof_bundle_v1_mutations.json")


def _policy(overrides: dict[str, Any] | None = None) -> PowParams:
    return dataclasses.replace(PowParams(**GOLDEN["policy"]), **(overrides or {}))


def _parent(obj: Any, path: list[Any]) -> Any:
    for key in path[:-1]:
        obj = obj[key]
    return obj


def _flip(text: str, byte: int, bit: int) -> str:
    prefix = "0x" if text.startswith("0x") else ""
    raw = bytearray.fromhex(text.removeprefix("0x"))
    raw[byte] ^= 1 << bit
    return prefix + raw.hex()


def _mutated(mutation: dict[str, Any]) -> ProofBundle | dict[str, Any]:
    """The bundle of ``mutation``: JSON for most ops, parsed text for ``append_text``."""
    bundle = copy.deepcopy(GOLDEN["bundle"])
    op, path = mutation["op"], mutation.get("path", [])
    if op == "append_text":
        return ProofBundle.loads(json.dumps(bundle) + mutation["value"])
    if op == "none":
        return bundle
    parent, key = _parent(bundle, path), path[-1]
    if op == "flip_bit":
        parent[key] = _flip(parent[key], mutation["byte"], mutation["bit"])
    elif op == "set":
        parent[key] = mutation["value"]
    elif op == "delete":
        del parent[key]
    elif op == "append_hex":
        parent[key] += mutation["value"]
    elif op == "truncate":
        parent[key] = parent[key][: mutation["length"]]
    else:
        raise AssertionError(f"unknown op {op!r}")
    return bundle


def _verify(mutation: dict[str, Any]) -> list[StepReport]:
    document = mutation.get("document_hex", GOLDEN["document_hex"])
    reports: list[StepReport] = []
    verify_bundle(
        _mutated(mutation),
        document_bytes=None if document is None else bytes.fromhex(document),
        policy=_policy(mutation.get("policy")),
        on_step=reports.append,
    )
    return reports


def test_the_golden_bundle_verifies_every_step() -> None:
    reports = _verify({"op": "none"})
    assert [r.step for r in reports] == list(Step)
    assert not any(r.skipped for r in reports)


def test_the_golden_bundle_decodes_and_encodes_to_the_same_bytes() -> None:
    bundle = ProofBundle.from_json(GOLDEN["bundle"])
    assert bundle.to_json() == GOLDEN["bundle"]
    assert bundle.document_sha256.hex() == GOLDEN["bundle"]["document"]["sha256"]
    assert ProofBundle.loads(bundle.dumps()) == bundle


def test_the_mutations_cover_every_step_and_have_unique_names() -> None:
    names = [m["name"] for m in MUTATIONS]
    assert len(names) == len(set(names))
    assert {m["fails_at"] for m in MUTATIONS} == {s.name for s in Step} | {None}


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m["name"] for m in MUTATIONS])
def test_each_mutation_fails_at_exactly_its_step(mutation: dict[str, Any]) -> None:
    if mutation["fails_at"] is None:
        _verify(mutation)
        return
    with pytest.raises(ProofError) as caught:
        _verify(mutation)
    assert caught.value.step == Step[mutation["fails_at"]], caught.value
