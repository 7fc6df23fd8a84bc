"""Trust policies: the shipped ones, policy files, real mainnet headers, and the forgeries
that only a policy stops (docs/proof-bundle.md, "Trust policies")."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from ledger.anchor.chain import mine
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.work import PowFunction, pow_hash
from ledger.core.proof.anchor_steps import check_headers, check_links
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import (
    DEVNET,
    SHIPPED,
    PolicyError,
    TrustPolicy,
    policy_for_chain,
    policy_named,
)
from ledger.core.proof.steps import ProofError, Step
from ledger.core.proof.verify import verify_bundle
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle
from tests.ledger.core._vectors import VECTORS_DIR, load

VECTORS = load("chain_headers.json")
BTC = VECTORS["bitcoin_mainnet"]
MAINNET = policy_named("bitcoin-mainnet")


def _raw(item: dict[str, Any]) -> bytes:
    return bytes.fromhex(item["header"])


def _changed(raw: bytes, at: int) -> bytes:
    out = bytearray(raw)
    out[at] ^= 0x01
    return bytes(out)


@pytest.fixture(scope="module")
def devnet_forgery() -> Forged:
    """A from-scratch bundle for a document never notarized: headers mined in a fraction
    of a second at the bundled chain's 16 bits."""
    return forge_bundle(chain=DEVNET.chain, headers=3)


# -- the shipped policies ---------------------------------------------------------------


def test_the_shipped_policies_are_the_seven_named() -> None:
    assert list(SHIPPED) == [
        "bitcoin-mainnet",
        "bitcoin-testnet",
        "bitcoin-signet",
        "bitcoin-regtest",
        "litecoin-mainnet",
        "litecoin-regtest",
        "devnet",
    ]
    assert [p.name for p in SHIPPED.values() if p.independent] == [
        "bitcoin-mainnet",
        "litecoin-mainnet",
    ]
    assert SHIPPED["litecoin-mainnet"].pow_function is PowFunction.SCRYPT
    assert SHIPPED["litecoin-regtest"].pow_function is PowFunction.SCRYPT


@pytest.mark.parametrize("name", ["bitcoin-regtest", "litecoin-regtest", "devnet"])
def test_an_operators_chain_says_it_is_not_independent_evidence(name: str) -> None:
    note = SHIPPED[name].note
    assert "not independent evidence" in note and "confirmations are the operator's own" in note


def test_an_unknown_policy_name_lists_the_shipped_ones() -> None:
    with pytest.raises(PolicyError, match="bitcoin-mainnet, bitcoin-testnet"):
        policy_named("bitcoin")


def test_a_bundle_names_its_chain_by_name_or_by_genesis_hash() -> None:
    assert policy_for_chain("bitcoin-mainnet") is MAINNET
    genesis = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
    assert policy_for_chain(genesis) is MAINNET
    assert policy_for_chain(genesis.upper()) is None
    assert policy_for_chain("notary-devnet-pow") is DEVNET
    assert policy_for_chain("dogecoin") is None


def test_a_policy_file_round_trips_and_refuses_what_it_does_not_know() -> None:
    for policy in SHIPPED.values():
        assert TrustPolicy.from_json(json.loads(json.dumps(policy.to_json()))) == policy
    obj = MAINNET.to_json()
    with pytest.raises(PolicyError, match="unknown policy keys: trust_all"):
        TrustPolicy.from_json(obj | {"trust_all": True})
    with pytest.raises(PolicyError, match="lowercase"):
        TrustPolicy.from_json(obj | {"max_target": obj["max_target"].upper()})
    with pytest.raises(PolicyError, match="pow must be one of"):
        TrustPolicy.from_json(obj | {"pow": "x11"})
    with pytest.raises(PolicyError, match="confirmations must be an integer"):
        TrustPolicy.from_json(obj | {"confirmations": 6.0})
    with pytest.raises(PolicyError, match="confirmations must be at least 1"):
        TrustPolicy.from_json(obj | {"confirmations": 0})
    without_genesis = {k: v for k, v in obj.items() if k != "genesis"}
    with pytest.raises(PolicyError, match="genesis must be given"):
        TrustPolicy.from_json(without_genesis)


# -- real Bitcoin and Litecoin mainnet headers --------------------------------------------


def test_the_bitcoin_genesis_header_hashes_to_the_policys_genesis_hash() -> None:
    genesis = BlockHeader.unmarshal(_raw(BTC["genesis"]))
    assert genesis.hash() == MAINNET.genesis_hash
    assert genesis.hash()[::-1].hex() == BTC["genesis"]["hash"]
    assert genesis.meets_target()
    # genesis-era work is far below the policy's floor: an old header is no recent block
    with pytest.raises(ProofError, match="work is short"):
        check_headers("bitcoin-mainnet", [_raw(BTC["genesis"])], MAINNET)


def test_real_mainnet_headers_carry_the_work_and_links_of_bitcoin_mainnet() -> None:
    linked = [_raw(item) for item in BTC["linked"]]
    headers = check_headers("bitcoin-mainnet", linked, MAINNET)
    for header, item in zip(headers, BTC["linked"], strict=True):
        assert header.hash()[::-1].hex() == item["hash"]
    two = replace(MAINNET, confirmations=2)
    assert "2 linked headers" in check_links(headers, two).detail
    with pytest.raises(ProofError, match="2 confirmations, policy bitcoin-mainnet needs 6"):
        check_links(headers, MAINNET)
    singles = check_headers("bitcoin-mainnet", [_raw(i) for i in BTC["single"]], MAINNET)
    assert [h.hash()[::-1].hex() for h in singles] == [i["hash"] for i in BTC["single"]]


@pytest.mark.parametrize("at", [0, 4, 36, 68, 72, 76, 79])
def test_one_byte_changed_in_a_real_header_fails(at: int) -> None:
    linked = [_raw(item) for item in BTC["linked"]]
    tampered = [_changed(linked[0], at), linked[1]]
    two = replace(MAINNET, confirmations=2)
    with pytest.raises(ProofError) as caught:
        check_links(check_headers("bitcoin-mainnet", tampered, two), two)
    error = caught.value
    # the changed header's hash no longer meets its target, or (bits changed) its work is
    # short or its target changed; even a header that passed would not link any more
    assert error.step in (Step.PROOF_OF_WORK, Step.HEADER_LINKS)
    assert error.index in (0, 1)


def test_real_mainnet_headers_pass_no_other_policy() -> None:
    linked = [_raw(item) for item in BTC["linked"]]
    for policy in SHIPPED.values():
        if policy is not MAINNET:
            with pytest.raises(ProofError, match="policy .* trusts"):
                check_headers("bitcoin-mainnet", linked, policy)
    # relabelled, they would pass the floor of every SHA256d chain: the chain name and
    # the genesis are what keep them apart; scrypt chains refuse their work outright
    for name in ("litecoin-mainnet", "litecoin-regtest"):
        policy = SHIPPED[name]
        with pytest.raises(ProofError, match="scrypt hash does not meet its target"):
            check_headers(policy.chain, linked, policy)


def test_the_litecoin_genesis_header_meets_its_target_by_scrypt() -> None:
    item = VECTORS["litecoin_mainnet"]["genesis"]
    raw = _raw(item)
    header = BlockHeader.unmarshal(raw)
    policy = policy_named("litecoin-mainnet")
    assert header.hash() == policy.genesis_hash
    scrypt = pow_hash(raw, PowFunction.SCRYPT)
    assert scrypt[::-1].hex() == item["scrypt_hash"]
    assert int.from_bytes(scrypt, "little") <= header.target()
    assert not header.meets_target()  # by SHA256d it would not: the work is scrypt's
    genesis_floor = replace(policy, max_target=header.target())
    assert check_headers("litecoin-mainnet", [raw], genesis_floor) == [header]
    with pytest.raises(ProofError, match="work is short"):
        check_headers("litecoin-mainnet", [raw], policy)


# -- forgeries ----------------------------------------------------------------------------


def test_a_from_scratch_bundle_passes_only_devnet(devnet_forgery: Forged) -> None:
    verdict = verify_bundle(devnet_forgery.bundle, document_bytes=DOCUMENT, policy=DEVNET)
    assert verdict.policy is DEVNET and not verdict.independent
    assert any("not independent evidence" in line for line in verdict.lines())
    for policy in SHIPPED.values():
        if policy is not DEVNET:
            with pytest.raises(ProofError, match="policy .* trusts"):
                verify_bundle(devnet_forgery.bundle, document_bytes=DOCUMENT, policy=policy)


@pytest.mark.parametrize(
    "name", ["bitcoin-mainnet", "bitcoin-testnet", "bitcoin-signet", "litecoin-mainnet"]
)
def test_a_from_scratch_bundle_relabelled_fails_at_the_work(
    devnet_forgery: Forged, name: str
) -> None:
    policy = SHIPPED[name]
    relabelled = devnet_forgery.bundle.to_json()
    relabelled["anchor"]["chain"] = policy.chain
    with pytest.raises(ProofError) as caught:
        verify_bundle(relabelled, document_bytes=DOCUMENT, policy=policy)
    assert caught.value.step == Step.PROOF_OF_WORK and caught.value.index == 0
    assert "work is short" in caught.value.reason


def test_on_regtest_anyone_mines_the_headers_and_the_verdict_says_so(
    devnet_forgery: Forged,
) -> None:
    regtest = SHIPPED["bitcoin-regtest"]
    relabelled = devnet_forgery.bundle.to_json()
    relabelled["anchor"]["chain"] = regtest.chain
    verdict = verify_bundle(relabelled, document_bytes=DOCUMENT, policy=regtest)
    assert not verdict.independent
    assert (
        "Policy bitcoin-regtest: the operator's own chain: not independent evidence"
        in (verdict.lines()[0])
    )


def test_a_regtest_proof_never_passes_a_mainnet_policy() -> None:
    for chain in ("bitcoin", "litecoin"):
        regtest = SHIPPED[f"{chain}-regtest"]
        mainnet = SHIPPED[f"{chain}-mainnet"]
        forged = forge_bundle(chain=regtest.chain, difficulty_bits=1, headers=6)
        if regtest.pow_function is PowFunction.SHA256D:
            verify_bundle(forged.bundle, document_bytes=DOCUMENT, policy=regtest)
        relabelled = forged.bundle.to_json()
        relabelled["anchor"]["chain"] = mainnet.chain
        with pytest.raises(ProofError) as caught:
            verify_bundle(relabelled, document_bytes=DOCUMENT, policy=mainnet)
        assert caught.value.step == Step.PROOF_OF_WORK


def test_an_appended_header_is_no_confirmation_without_the_policys_work(
    devnet_forgery: Forged,
) -> None:
    good = devnet_forgery.bundle.to_json()
    last = BlockHeader.unmarshal(bytes.fromhex(good["anchor"]["headers"][-1]))
    easy = BlockHeader(1, last.hash(), bytes(32), last.timestamp + 1, 0x207FFFFF, 0)
    appended = json.loads(json.dumps(good))
    appended["anchor"]["headers"].append(mine(easy).marshal().hex())
    with pytest.raises(ProofError) as caught:
        verify_bundle(appended, document_bytes=DOCUMENT, policy=DEVNET)
    assert caught.value.step == Step.PROOF_OF_WORK and caught.value.index == 3
    verdict = verify_bundle(good, document_bytes=DOCUMENT, policy=DEVNET)
    assert verdict.confirmations == 3


def test_a_missing_window_anchor_is_refused_where_the_policy_requires_one() -> None:
    bare = forge_bundle(with_contract=False)
    strict = replace(bare.policy, require_window=True)
    with pytest.raises(ProofError) as caught:
        verify_bundle(bare.bundle, document_bytes=DOCUMENT, policy=strict)
    assert caught.value.step == Step.CONTRACT and "requires a window anchor" in caught.value.reason
    verify_bundle(forge_bundle().bundle, document_bytes=DOCUMENT, policy=strict)
    verify_bundle(bare.bundle, document_bytes=DOCUMENT, policy=bare.policy)


def test_the_verdicts_date_is_the_anchor_headers_not_the_directory_blocks(
    devnet_forgery: Forged,
) -> None:
    verdict = verify_bundle(devnet_forgery.bundle, document_bytes=DOCUMENT, policy=DEVNET)
    anchor = BlockHeader.unmarshal(devnet_forgery.bundle.anchor.headers[0])
    assert verdict.anchor_time_s == anchor.timestamp
    assert verdict.operator_time_s != verdict.anchor_time_s
    text = "\n".join(verdict.lines())
    assert "existed no later than" in text and "the anchor block's header time" in text
    assert "is the operator's claim, not the proof's" in text
    assert verdict.median_time_s is None  # devnet gives no median-time span


def test_the_median_time_bound_needs_the_policys_span_of_headers() -> None:
    forged = forge_bundle(headers=11)
    spanned = replace(forged.policy, median_time_span=11)
    verdict = verify_bundle(forged.bundle, document_bytes=DOCUMENT, policy=spanned)
    times = sorted(BlockHeader.unmarshal(h).timestamp for h in forged.bundle.anchor.headers)
    assert verdict.median_time_s == times[5]
    assert any("median time of 11 headers" in line for line in verdict.lines())
    short = forge_bundle(headers=10)
    verdict = verify_bundle(
        short.bundle, document_bytes=DOCUMENT, policy=replace(spanned, confirmations=10)
    )
    assert verdict.median_time_s is None


# -- canonical bundles --------------------------------------------------------------------


def _refused(text: str, forged: Forged) -> ProofError:
    with pytest.raises(ProofError) as caught:
        verify_bundle(ProofBundle.loads(text), document_bytes=DOCUMENT, policy=forged.policy)
    assert caught.value.step == Step.FORMAT
    return caught.value


@pytest.fixture(scope="module")
def forged() -> Forged:
    return forge_bundle()


def test_respelled_hex_is_refused(forged: Forged) -> None:
    good = forged.bundle.to_json()
    keymr = good["receipt"]["directoryblockkeymr"]
    upper = json.loads(json.dumps(good))
    upper["receipt"]["directoryblockkeymr"] = keymr.upper()
    assert "must be lowercase hex" in _refused(json.dumps(upper), forged).reason
    prefixed = json.loads(json.dumps(good))
    prefixed["receipt"]["directoryblockkeymr"] = "0x" + keymr
    assert "is not valid hex" in _refused(json.dumps(prefixed), forged).reason
    header = json.loads(json.dumps(good))
    header["anchor"]["headers"][1] = header["anchor"]["headers"][1].upper()
    assert "anchor headers[1] must be lowercase hex" in _refused(json.dumps(header), forged).reason
    address = json.loads(json.dumps(good))
    address["contract"]["contractaddress"] = address["contract"]["contractaddress"][2:]
    assert "contractaddress must be 0x" in _refused(json.dumps(address), forged).reason


def test_duplicate_and_unknown_keys_are_refused(forged: Forged) -> None:
    text = forged.bundle.dumps()
    twice = text.replace('"version": 1,', '"version": 1,\n  "version": 1,', 1)
    assert "duplicate key 'version'" in _refused(twice, forged).reason
    good = forged.bundle.to_json()
    extra = json.loads(json.dumps(good))
    extra["anchor"]["confirmed_by"] = "a notary"
    assert "anchor has unknown keys: confirmed_by" in _refused(json.dumps(extra), forged).reason
    missing = json.loads(json.dumps(good))
    del missing["contract"]
    assert "bundle lacks keys: contract" in _refused(json.dumps(missing), forged).reason


@pytest.mark.parametrize("value", ["1.0", "1e0", "true", '"1"', "NaN"])
def test_a_non_integer_where_an_integer_is_due_is_refused(forged: Forged, value: str) -> None:
    text = forged.bundle.dumps()
    index = forged.bundle.anchor.tx.tx_index
    respelled = text.replace(f'"tx_index": {index},', f'"tx_index": {value},', 1)
    assert respelled != text
    _refused(respelled, forged)


def test_the_policy_file_shown_in_the_docs_reads() -> None:
    docs = (VECTORS_DIR.parents[1] / "docs" / "proof-bundle.md").read_text(encoding="utf-8")
    example = docs.split("A policy file is the JSON of one policy", 1)[1]
    text = example.split("```json", 1)[1].split("```", 1)[0]
    policy = TrustPolicy.from_json(json.loads(text))
    assert policy.genesis_hash == MAINNET.genesis_hash
    assert policy.max_target == MAINNET.max_target // 4
    assert policy.confirmations == 12 and policy.require_window


def test_real_litecoin_regtest_headers_carry_scrypt_work() -> None:
    headers = [bytes.fromhex(h) for h in VECTORS["litecoin_regtest"]["headers"]]
    regtest = policy_named("litecoin-regtest")
    parsed = check_headers("litecoin-regtest", headers, regtest)
    assert parsed[0].hash() == regtest.genesis_hash  # the genesis is checked by its hash
    assert "4 linked headers" in check_links(parsed, regtest).detail
    by_sha256d = replace(regtest, pow_function=PowFunction.SHA256D)
    with pytest.raises(ProofError, match="header 1: sha256d hash does not meet its target"):
        check_headers("litecoin-regtest", headers, by_sha256d)
    with pytest.raises(ProofError, match="header 0 is the genesis block of another chain"):
        check_headers("bitcoin-regtest", headers, policy_named("bitcoin-regtest"))
    with pytest.raises(ProofError, match="header 0: work is short"):
        check_headers("litecoin-mainnet", headers, policy_named("litecoin-mainnet"))


def test_version_3_is_read_canonically_too(forged: Forged) -> None:
    root = forged.bundle.receipt.directory_block_keymr.hex()
    base = forged.bundle.to_json() | {"version": 3, "commitment": None, "aggregation": None}
    section = {"root": root, "rfc3161": []}
    ProofBundle.loads(json.dumps(base | {"timestamps": section}))
    for bad, reason in [
        (section | {"note": "x"}, "timestamps has unknown keys: note"),
        ({"root": root.upper(), "rfc3161": []}, "root must be lowercase hex"),
        (
            section | {"rfc3161": [{"token": "", "certificates": [], "tsa": "x"}]},
            "timestamps.rfc3161[0] has unknown keys: tsa",
        ),
    ]:
        assert reason in _refused(json.dumps(base | {"timestamps": bad}), forged).reason
    aggregated = base | {"aggregation": {"leaf_index": 0, "tree_size": 1, "audit_path": []}}
    text = json.dumps(aggregated | {"timestamps": section})
    assert "aggregation must be null without a commitment" in _refused(text, forged).reason
