"""The wallet's JSON-RPC methods (docs/jsonrpc.md §5 (Wallet methods), docs/formats.md §9.4).

``build_registry(keyring, clock=..., heights=..., node=..., book=...)`` returns a
``MethodRegistry`` whose handlers are small closures over those objects: keys, addresses,
identity keys and compose methods here; named transactions, ``transactions`` and
``wallet-balances`` in ``ledger.wallet.tx_methods``; ``active-identity-keys`` and
``sign-data`` in ``ledger.wallet.identity_methods``. Wallet errors become JSON-RPC errors
in one place (``ledger.wallet.rpc_errors``).

While an encrypted wallet is locked only ``properties``, ``get-height`` and
``unlock-wallet`` answer; every other method fails with -32001 (as walletd does).
"""

from __future__ import annotations

from importlib import metadata
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from ledger.core.clock import Clock
from ledger.core.entry import Entry
from ledger.core.errors import AddressError
from ledger.core.keys import SigningKey
from ledger.jsonrpc import InternalError, InvalidParams
from ledger.jsonrpc.registry import MethodRegistry
from ledger.wallet import identity
from ledger.wallet.compose import compose_chain, compose_entry
from ledger.wallet.errors import UnknownKeyError, WalletError
from ledger.wallet.hdkeys import KeyKind
from ledger.wallet.identity_methods import add_identity_replay_methods
from ledger.wallet.keyring import ADDRESS_KINDS, Keyring, public_kind
from ledger.wallet.node_link import HeightSource, NodeLink
from ledger.wallet.rpc_errors import rpc_errors
from ledger.wallet.tx_book import TransactionBook
from ledger.wallet.tx_methods import add_transaction_methods

__all__ = ["WALLET_API_VERSION", "build_registry", "wallet_version"]

WALLET_API_VERSION = "2.0"
_IDENTITY: frozenset[KeyKind] = frozenset({"identity"})
_EC: frozenset[KeyKind] = frozenset({"ec"})


def wallet_version() -> str:
    """Version of the installed ``notary`` distribution (``0.0.0`` when not installed)."""
    try:
        return metadata.version("notary")
    except metadata.PackageNotFoundError:
        return "0.0.0"


# -- params models --------------------------------------------------------------------------


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, hide_input_in_errors=True)


class AddressParams(_Params):
    address: str


class SecretItem(_Params):
    secret: SecretStr


class ImportAddressesParams(_Params):
    addresses: list[SecretItem]


class KoinifyParams(_Params):
    words: SecretStr


class PublicKeyParams(_Params):
    public: str


class ImportIdentityKeysParams(_Params):
    keys: list[SecretItem]


class UnlockParams(_Params):
    passphrase: SecretStr
    timeout: int = Field(ge=0)


class FirstEntryJson(_Params):
    extids: list[str] = Field(default_factory=list)
    content: str = ""


class ChainJson(_Params):
    firstentry: FirstEntryJson


class ComposeChainParams(_Params):
    chain: ChainJson
    ecpub: str
    force: bool = False


class ComposeEntryParams(_Params):
    entry: dict[str, Any]
    ecpub: str
    force: bool = False


class IdentityChainParams(_Params):
    name: list[str]
    pubkeys: list[str]
    ecpub: str
    force: bool = False


class KeyReplacementParams(_Params):
    chainid: str
    oldkey: str
    newkey: str
    signerkey: str
    ecpub: str
    force: bool = False


class Attribute(_Params):
    key: Any = None
    value: Any = None


class IdentityAttributeParams(_Params):
    receiver_chainid: Annotated[str, Field(alias="receiver-chainid")]
    destination_chainid: Annotated[str, Field(alias="destination-chainid")]
    attributes: list[Attribute]
    signerkey: str
    signer_chainid: Annotated[str, Field(alias="signer-chainid")]
    ecpub: str
    force: bool = False


class EndorsementParams(_Params):
    destination_chainid: Annotated[str, Field(alias="destination-chainid")]
    entry_hash: Annotated[str, Field(alias="entry-hash")]
    signerkey: str
    signer_chainid: Annotated[str, Field(alias="signer-chainid")]
    ecpub: str
    force: bool = False


def _checked_public(address: str, kinds: frozenset[KeyKind]) -> str:
    """``address`` if it is a valid public string of ``kinds``; AddressError otherwise."""
    if public_kind(address) not in kinds:
        raise AddressError("wrong kind of address")
    return address


# -- registry ---------------------------------------------------------------------------------


def build_registry(
    keyring: Keyring,
    *,
    clock: Clock,
    heights: HeightSource,
    node: NodeLink,
    book: TransactionBook,
) -> MethodRegistry:
    """All wallet methods over ``keyring``; commit timestamps come from ``clock`` (ms).

    ``heights`` answers ``get-height`` (and default heights); ``node`` the other node
    questions (EC rate, balances, chains, coin blocks); ``book`` holds named transactions.
    """
    registry = MethodRegistry()
    _add_address_methods(registry, keyring)
    _add_identity_key_methods(registry, keyring)
    _add_compose_methods(registry, keyring, clock)
    _add_service_methods(registry, keyring, heights)
    add_transaction_methods(registry, keyring=keyring, node=node, book=book)
    add_identity_replay_methods(registry, keyring=keyring, node=node, heights=heights)
    return registry


def _add_address_methods(registry: MethodRegistry, keyring: Keyring) -> None:
    @registry.method("generate-factoid-address")
    @rpc_errors
    def generate_factoid_address() -> dict[str, str]:
        return keyring.generate("fct").to_json()

    @registry.method("generate-ec-address")
    @rpc_errors
    def generate_ec_address() -> dict[str, str]:
        return keyring.generate("ec").to_json()

    @registry.method("import-addresses", params=ImportAddressesParams)
    @rpc_errors
    def import_addresses(params: ImportAddressesParams) -> dict[str, Any]:
        keyring.require_unlocked()
        secrets = [item.secret.get_secret_value() for item in params.addresses]
        for secret in secrets:  # validate all first: a bad string imports nothing
            keyring.check_secret(secret, kinds=ADDRESS_KINDS)
        return {"addresses": [keyring.import_secret(s).to_json() for s in secrets]}

    @registry.method("import-koinify", params=KoinifyParams)
    @rpc_errors
    def import_koinify(params: KoinifyParams) -> dict[str, str]:
        keyring.require_unlocked()
        return keyring.import_koinify(params.words.get_secret_value()).to_json()

    @registry.method("address", params=AddressParams)
    @rpc_errors
    def address(params: AddressParams) -> dict[str, str]:
        keyring.require_unlocked()
        return keyring.get(_checked_public(params.address, ADDRESS_KINDS)).to_json()

    @registry.method("all-addresses")
    @rpc_errors
    def all_addresses() -> dict[str, Any]:
        return {"addresses": [pair.to_json() for pair in keyring.list(ADDRESS_KINDS)]}

    @registry.method("remove-address", params=AddressParams)
    @rpc_errors
    def remove_address(params: AddressParams) -> dict[str, bool]:
        keyring.require_unlocked()
        keyring.remove(_checked_public(params.address, ADDRESS_KINDS))
        return {"success": True}


def _add_identity_key_methods(registry: MethodRegistry, keyring: Keyring) -> None:
    @registry.method("generate-identity-key")
    @rpc_errors
    def generate_identity_key() -> dict[str, str]:
        return keyring.generate("identity").to_json()

    @registry.method("import-identity-keys", params=ImportIdentityKeysParams)
    @rpc_errors
    def import_identity_keys(params: ImportIdentityKeysParams) -> dict[str, Any]:
        keyring.require_unlocked()
        secrets = [item.secret.get_secret_value() for item in params.keys]
        for secret in secrets:
            keyring.check_secret(secret, kinds=_IDENTITY)
        return {"keys": [keyring.import_secret(s, kinds=_IDENTITY).to_json() for s in secrets]}

    @registry.method("all-identity-keys")
    @rpc_errors
    def all_identity_keys() -> dict[str, Any]:
        return {"keys": [pair.to_json() for pair in keyring.list(_IDENTITY)]}

    @registry.method("identity-key", params=PublicKeyParams)
    @rpc_errors
    def identity_key(params: PublicKeyParams) -> dict[str, str]:
        keyring.require_unlocked()
        return keyring.get(_checked_public(params.public, _IDENTITY), kinds=_IDENTITY).to_json()

    @registry.method("remove-identity-key", params=PublicKeyParams)
    @rpc_errors
    def remove_identity_key(params: PublicKeyParams) -> dict[str, bool]:
        keyring.require_unlocked()
        keyring.remove(_checked_public(params.public, _IDENTITY), kinds=_IDENTITY)
        return {"success": True}

    @registry.method("wallet-backup")
    @rpc_errors
    def wallet_backup() -> dict[str, Any]:
        return {
            "wallet-seed": keyring.mnemonic(),
            "addresses": [pair.to_json() for pair in keyring.list(ADDRESS_KINDS)],
            "identity-keys": [pair.to_json() for pair in keyring.list(_IDENTITY)],
        }


def _add_compose_methods(registry: MethodRegistry, keyring: Keyring, clock: Clock) -> None:
    def ec_key(ecpub: str) -> SigningKey:
        keyring.require_unlocked()
        try:
            return keyring.signing_key(ecpub, kinds=_EC)
        except UnknownKeyError:
            _checked_public(ecpub, _EC)  # a malformed string is "Invalid Address"
            raise

    def signer_key(idpub: str) -> SigningKey:
        try:
            return keyring.signing_key(idpub, kinds=_IDENTITY)
        except UnknownKeyError:
            _checked_public(idpub, _IDENTITY)
            raise

    def now_ms() -> int:
        return round(clock.now() * 1000)

    @registry.method("compose-chain", params=ComposeChainParams, blocking=False)
    @rpc_errors
    def compose_chain_method(params: ComposeChainParams) -> dict[str, Any]:
        key = ec_key(params.ecpub)
        first = params.chain.firstentry
        parsed = Entry.from_json(
            {"chainname": [], "extids": first.extids, "content": first.content}
        )
        entry = Entry.first_entry(parsed.external_ids, parsed.content)
        return compose_chain(key, entry, timestamp_ms=now_ms())

    @registry.method("compose-entry", params=ComposeEntryParams, blocking=False)
    @rpc_errors
    def compose_entry_method(params: ComposeEntryParams) -> dict[str, Any]:
        key = ec_key(params.ecpub)
        return compose_entry(key, Entry.from_json(params.entry), timestamp_ms=now_ms())

    @registry.method("compose-identity-chain", params=IdentityChainParams, blocking=False)
    @rpc_errors
    def compose_identity_chain(params: IdentityChainParams) -> dict[str, Any]:
        key = ec_key(params.ecpub)
        entry = identity.identity_chain_entry(params.name, params.pubkeys)
        return compose_chain(key, entry, timestamp_ms=now_ms())

    @registry.method(
        "compose-identity-key-replacement", params=KeyReplacementParams, blocking=False
    )
    @rpc_errors
    def compose_identity_key_replacement(params: KeyReplacementParams) -> dict[str, Any]:
        key = ec_key(params.ecpub)
        entry = identity.key_replacement_entry(
            params.chainid, params.oldkey, params.newkey, signer=signer_key(params.signerkey)
        )
        return compose_entry(key, entry, timestamp_ms=now_ms())

    @registry.method("compose-identity-attribute", params=IdentityAttributeParams, blocking=False)
    @rpc_errors
    def compose_identity_attribute(params: IdentityAttributeParams) -> dict[str, Any]:
        key = ec_key(params.ecpub)
        if any(a.key is None or a.value is None for a in params.attributes):
            raise InvalidParams("Attribute key and value must not be null")
        entry = identity.attribute_entry(
            receiver_chain_id=params.receiver_chainid,
            destination_chain_id=params.destination_chainid,
            attributes=[(a.key, a.value) for a in params.attributes],
            signer=signer_key(params.signerkey),
            signer_chain_id=params.signer_chainid,
        )
        return compose_entry(key, entry, timestamp_ms=now_ms())

    @registry.method(
        "compose-identity-attribute-endorsement", params=EndorsementParams, blocking=False
    )
    @rpc_errors
    def compose_identity_attribute_endorsement(params: EndorsementParams) -> dict[str, Any]:
        key = ec_key(params.ecpub)
        entry = identity.attribute_endorsement_entry(
            destination_chain_id=params.destination_chainid,
            entry_hash=params.entry_hash,
            signer=signer_key(params.signerkey),
            signer_chain_id=params.signer_chainid,
        )
        return compose_entry(key, entry, timestamp_ms=now_ms())


def _add_service_methods(registry: MethodRegistry, keyring: Keyring, heights: HeightSource) -> None:
    version = wallet_version()

    @registry.method("properties", blocking=False)
    def properties() -> dict[str, str]:
        return {"walletversion": version, "walletapiversion": WALLET_API_VERSION}

    @registry.method("get-height")
    async def get_height() -> dict[str, int]:
        try:
            return {"height": await heights.height()}
        except WalletError as exc:
            raise InternalError(str(exc)) from None

    @registry.method("unlock-wallet", params=UnlockParams)
    @rpc_errors
    def unlock_wallet(params: UnlockParams) -> dict[str, Any]:
        until = keyring.unlock(params.passphrase.get_secret_value(), params.timeout)
        return {"success": True, "unlockeduntil": int(until)}
