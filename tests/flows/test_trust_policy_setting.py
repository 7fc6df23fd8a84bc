"""``NOTARY_TRUST_POLICY``: the policy the pipeline checks anchors and exports bundles under."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from flows.settings import PipelineSettings
from ledger.core.proof.policy import DEVNET, SHIPPED


def test_the_default_is_the_bundled_chain_and_a_shipped_name_is_taken(tmp_path: Path) -> None:
    assert PipelineSettings(data_dir=tmp_path).policy() is DEVNET
    chosen = PipelineSettings(data_dir=tmp_path, trust_policy="litecoin-regtest")
    assert chosen.policy() is SHIPPED["litecoin-regtest"]


def test_the_environment_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTARY_TRUST_POLICY", "bitcoin-mainnet")
    assert PipelineSettings(data_dir=tmp_path).policy() is SHIPPED["bitcoin-mainnet"]


def test_an_unknown_name_is_refused_when_the_settings_are_read(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="no policy named 'bitcoin'; shipped: bitcoin-main"):
        PipelineSettings(data_dir=tmp_path, trust_policy="bitcoin")
