"""The golden proof bundles on disk, and their named mutations.

Three bundles, each in ``tests/vectors/`` with its mutations:

- ``proof_bundle_v1.json``: version 1, a clear-text entry that carries the document hash;
- ``proof_bundle_v2_aggregated.json``: version 2, the document's commitment is a leaf of an
  aggregation tree whose root and size one batch entry carries;
- ``proof_bundle_v2_document.json``: version 2, one commitment entry for the document.

Each holds a bundle, the document it proves and the policy it needs; ``*_mutations.json``
a list of named changes, each with the one step that must catch it. The files are data
written once and never regenerated here, so an encoder and a decoder changed together
cannot pass: the bytes are fixed.

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
from ledger.core.proof.policy import TrustPolicy
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.proof.verify import verify_bundle
from tests.ledger.anchor.bundles import policy_of
from tests.ledger.core._vectors import load

GOLDENS = {
    name: (load(f"proof_bundle_{name}.json"), load(f"proof_bundle_{name}_mutations.json"))
    for name in ("v1", "v2_aggregated", "v2_document")
}
CASES = [
    pytest.param(name, mutation, id=f"{name}: {mutation['name']}")
    for name, (_, mutations) in GOLDENS.items()
    for mutation in mutations
]
#: Steps a version-1 bundle skips, so that none of its mutations can fail there.
V1_SKIPPED = {Step.COMMITMENT, Step.AGGREGATION}


def _policy(golden: dict[str, Any], overrides: dict[str, Any] | None = None) -> TrustPolicy:
    params = dataclasses.replace(PowParams(**golden["policy"]), **(overrides or {}))
    return policy_of(params)


def _parent(obj: Any, path: list[Any]) -> Any:
    for key in path[:-1]:
        obj = obj[key]
    return obj


def _flip(text: str, byte: int, bit: int) -> str:
    prefix = "0x" if text.startswith("0x") else ""
    raw = bytearray.fromhex(text.removeprefix("0x"))
    raw[byte] ^= 1 << bit
    return prefix + raw.hex()


def _mutated(golden: dict[str, Any], mutation: dict[str, Any]) -> ProofBundle | dict[str, Any]:
    """The bundle of ``mutation``: JSON for most ops, parsed text for ``append_text``."""
    bundle = copy.deepcopy(golden["bundle"])
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


def _verify(name: str, mutation: dict[str, Any]) -> list[StepReport]:
    golden = GOLDENS[name][0]
    document = mutation.get("document_hex", golden["document_hex"])
    reports: list[StepReport] = []
    verify_bundle(
        _mutated(golden, mutation),
        document_bytes=None if document is None else bytes.fromhex(document),
        policy=_policy(golden, mutation.get("policy")),
        on_step=reports.append,
    )
    return reports


@pytest.mark.parametrize(
    ("name", "version", "skipped"),
    [
        ("v1", 1, V1_SKIPPED),
        ("v2_aggregated", 2, set()),
        ("v2_document", 2, {Step.AGGREGATION}),
    ],
)
def test_the_golden_bundle_verifies_every_step(name: str, version: int, skipped: set[Step]) -> None:
    reports = _verify(name, {"op": "none"})
    assert [r.step for r in reports] == list(Step)
    assert {r.step for r in reports if r.skipped} == skipped
    assert GOLDENS[name][0]["bundle"]["version"] == version


@pytest.mark.parametrize("name", GOLDENS)
def test_the_golden_bundle_decodes_and_encodes_to_the_same_bytes(name: str) -> None:
    golden = GOLDENS[name][0]
    bundle = ProofBundle.from_json(golden["bundle"])
    assert bundle.to_json() == golden["bundle"]
    assert bundle.version == golden["bundle"]["version"]
    assert bundle.document_sha256.hex() == golden["bundle"]["document"]["sha256"]
    assert ProofBundle.loads(bundle.dumps()) == bundle


@pytest.mark.parametrize("name", GOLDENS)
def test_the_mutations_cover_every_step_and_have_unique_names(name: str) -> None:
    mutations = GOLDENS[name][1]
    names = [m["name"] for m in mutations]
    assert len(names) == len(set(names))
    reachable = set(Step) - (V1_SKIPPED if name == "v1" else set())
    assert {m["fails_at"] for m in mutations} == {s.name for s in reachable} | {None}


@pytest.mark.parametrize(("name", "mutation"), CASES)
def test_each_mutation_fails_at_exactly_its_step(name: str, mutation: dict[str, Any]) -> None:
    if mutation["fails_at"] is None:
        _verify(name, mutation)
        return
    with pytest.raises(ProofError) as caught:
        _verify(name, mutation)
    assert caught.value.step == Step[mutation["fails_at"]], caught.value
