"""Every secret a service's settings hold is hidden from its log lines, found by type.

``ledger.serving.settings_secrets`` is what each service's ``__main__`` gives the log
filter: a ``SecretStr`` field added to a settings class later is hidden without anyone
listing it (the four entry points used to list their secrets by hand).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, SecretBytes, SecretStr

from ledger.anchor.settings import AnchorSettings
from ledger.api.settings import ApiSettings
from ledger.node.settings import NodeSettings
from ledger.observability.logs import configure_logging
from ledger.serving import settings_secrets
from ledger.wallet.settings import WalletSettings

SERVICES = [NodeSettings, WalletSettings, ApiSettings, AnchorSettings]


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("settings_type", SERVICES, ids=lambda t: t.__name__)
def test_a_secret_field_added_later_is_hidden_from_the_logs(
    settings_type: type, restored_logging: None
) -> None:
    class Extended(settings_type):  # type: ignore[misc, valid-type]
        added_token: SecretStr | None = None

    settings = Extended(added_token=SecretStr("tok-added-later-5f1c"), data_dir="unused")
    stream = io.StringIO()
    configure_logging("text", "INFO", secrets=settings_secrets(settings), stream=stream)
    logging.getLogger("ledger.test").warning("calling with tok-added-later-5f1c in a header")
    line = stream.getvalue()
    assert "tok-added-later-5f1c" not in line
    assert "calling with *** in a header" in line


def test_the_services_own_secrets_are_found() -> None:
    node = NodeSettings(rpc_user="u", rpc_password=SecretStr("node-rpc-pw"))
    assert "node-rpc-pw" in settings_secrets(node)
    wallet = WalletSettings(
        passphrase=SecretStr("wallet-pass"), import_secrets=[SecretStr("Es-import")]
    )
    assert {"wallet-pass", "Es-import"} <= set(settings_secrets(wallet))
    anchor = AnchorSettings(btc_rpc_password=SecretStr("btc-pw"))
    found = settings_secrets(anchor)
    assert "btc-pw" in found  # the entry point's hand-made list had left it out
    assert anchor.ec_secret.get_secret_value() in found


def test_nested_models_collections_and_bytes_are_walked() -> None:
    class Inner(BaseModel):
        key: SecretBytes

    class Outer(BaseModel):
        inner: Inner
        many: dict[str, SecretStr]
        plain: str = "not a secret"
        empty: SecretStr = SecretStr("")

    outer = Outer(inner=Inner(key=SecretBytes(b"raw-key")), many={"a": SecretStr("in-dict")})
    assert sorted(settings_secrets(outer)) == ["in-dict", "raw-key"]
