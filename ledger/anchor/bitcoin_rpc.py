"""``AnchorBackend`` over Bitcoin Core's JSON-RPC (Bitcoin Core >= 0.21, Litecoin Core 0.21).

Anchoring uses the node's own wallet (``/wallet/<name>``), one transaction per anchor with
one ``OP_RETURN`` output (a ``data`` output of ``createrawtransaction``) carrying the
payload of docs/formats.md §7.2 (``"Fa"`` + height + KeyMR, 40 bytes) or the window
commitment of §7.3 (66 bytes): ``createrawtransaction`` -> ``fundrawtransaction`` (the
wallet adds inputs and change; ``fee_rate`` in sat/vB when configured, else the wallet's
estimate) -> ``signrawtransactionwithwallet`` -> ``sendrawtransaction``.

Following an anchor: ``gettransaction`` (confirmations, block hash, height, index); the
block must still be the best chain's block at that height (``getblockhash``), otherwise
the anchor counts as unconfirmed (a reorganization took it out). ``lost`` says when the
transaction will not be mined as it is (conflicted: negative confirmations; unconfirmed
and gone from the node's pool): the service then anchors the block again.

The inclusion proof: the transaction's legacy serialization (``ledger.anchor.legacy_tx``,
what the txid hashes), its Merkle path computed from the block's txids (``getblock``
verbosity 1, ``ledger.core.pow.merkle``) and the raw 80-byte headers from its block on
(``getblockhash`` + ``getblockheader`` verbose false); the path is checked against the
first header's Merkle root and the headers' links before the proof is returned.

The chain's name in bundles is ``<coin>-<network>``: the configured coin (``bitcoin``,
``litecoin``) and the node's ``getblockchaininfo`` ``chain`` (``main`` -> ``mainnet``,
``test`` -> ``testnet``, ``signet``, ``regtest``), e.g. ``litecoin-regtest``.

Errors: every failure of the node or wallet becomes ``AnchorBackendError`` with its
``reason`` (``ledger.anchor.backend``); the RPC password never appears in a message.
Calls are blocking (``JsonRpcClient``, the project's JSON-RPC client: Bitcoin Core
answers JSON-RPC 2.0 requests in 1.0 form, ``result`` and ``error`` both present, which
its codec reads), bounded by ``timeout_s``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from ledger.anchor.backend import AnchorBackendError, Inclusion, InclusionProof, NotConfirmed
from ledger.anchor.legacy_tx import legacy_serialization
from ledger.core.anchor_record import WindowCommitment, encode_anchor_payload
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import sha256d
from ledger.core.pow.encoding import from_display_hex, to_display_hex
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.merkle import merkle_path, root_from_path
from ledger.jsonrpc.client import JsonRpcClient
from ledger.jsonrpc.credentials import RpcAccess
from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcProtocolError, JsonRpcTransportError

__all__ = ["NETWORKS", "BitcoinRpcBackend", "chain_name"]

log = logging.getLogger(__name__)

#: ``getblockchaininfo`` ``chain`` -> the network part of a bundle's chain name.
NETWORKS = {"main": "mainnet", "test": "testnet", "signet": "signet", "regtest": "regtest"}

# Bitcoin Core's RPC error codes (src/rpc/protocol.h).
_INVALID_ADDRESS_OR_KEY = -5  # unknown transaction / block / mempool entry
_WALLET_ERROR = -4
_WALLET_INSUFFICIENT_FUNDS = -6
_WALLET_UNLOCK_NEEDED = -13
_WALLET_NOT_FOUND = -18
_WALLET_NOT_SPECIFIED = -19
_VERIFY_REJECTED = -26
_IN_WARMUP = -28


def chain_name(coin: str, network: str) -> str:
    """``<coin>-<network>`` from the node's ``getblockchaininfo`` ``chain`` (``NETWORKS``;
    another value is kept as it is)."""
    return f"{coin}-{NETWORKS.get(network, network)}"


def _fault(method: str, exc: JsonRpcCallError) -> AnchorBackendError:
    """The ``AnchorBackendError`` of an error object answered to ``method``."""
    text = f"{method}: {exc.message} (code {exc.code})"
    lowered = exc.message.lower()
    if exc.code == _WALLET_UNLOCK_NEEDED:
        return AnchorBackendError("wallet-locked", text)
    if exc.code == _WALLET_INSUFFICIENT_FUNDS or "insufficient funds" in lowered:
        return AnchorBackendError("wallet-empty", text)
    if exc.code in (_WALLET_NOT_FOUND, _WALLET_NOT_SPECIFIED):
        return AnchorBackendError("wallet-missing", text)
    if exc.code == _VERIFY_REJECTED:
        return AnchorBackendError("rejected", text)
    if exc.code == _IN_WARMUP:
        return AnchorBackendError("node-unreachable", text)
    return AnchorBackendError("rpc-error", text)


class BitcoinRpcBackend:
    """Anchors in a Bitcoin Core (or Litecoin Core) node through its wallet (module docstring).

    Args:
        url: the node's RPC endpoint, e.g. ``http://127.0.0.1:8332/``.
        wallet: the wallet's name (calls go to ``<url>/wallet/<wallet>``); "" for the
            node's only wallet.
        coin: ``bitcoin`` or ``litecoin`` (the first part of the chain's name).
        access: RPC credentials (``rpcuser``/``rpcpassword`` or the cookie's) and TLS trust.
        fee_rate_sat_vb: fee rate of anchor transactions in satoshis (litoshis) per virtual
            byte; None: the wallet's estimate (``-fallbackfee`` where it has none).
        stuck_blocks: an anchor still unmined this many blocks after it was sent makes
            ``check`` report ``fee-too-low``.
        timeout_s: connect/read timeout of each call, seconds.
    """

    def __init__(
        self,
        url: str,
        *,
        wallet: str = "",
        coin: str = "bitcoin",
        access: RpcAccess | None = None,
        fee_rate_sat_vb: float | None = None,
        stuck_blocks: int = 6,
        timeout_s: float = 10.0,
    ) -> None:
        base = url if url.endswith("/") else url + "/"
        endpoint = base + f"wallet/{quote(wallet, safe='')}" if wallet else base
        # No kept-alive connections: Bitcoin Core's HTTP server holds its shutdown until
        # open connections close (-rpcservertimeout, 30 s; measured: 30.2 s against 1.5 s).
        transport = httpx.HTTPTransport(
            verify=(access or RpcAccess()).ssl_verify(),
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self._rpc = JsonRpcClient(endpoint, timeout_s=timeout_s, access=access, transport=transport)
        self._coin = coin
        self._fee_rate = fee_rate_sat_vb
        self._stuck_blocks = stuck_blocks
        self._chain: str | None = None
        self._lock = threading.Lock()
        #: Sent here since the start: txid -> (payload, the node's height when sent).
        self._sent: dict[bytes, tuple[bytes, int]] = {}
        self._by_payload: dict[bytes, bytes] = {}

    # -- calls ----------------------------------------------------------------------------

    def _call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One call; every failure as ``AnchorBackendError`` (module docstring)."""
        try:
            return self._rpc.call(method, params)
        except JsonRpcCallError as exc:
            raise _fault(method, exc) from exc
        except JsonRpcProtocolError as exc:
            if exc.status_code in (401, 403):
                raise AnchorBackendError(
                    "rpc-refused", f"{method}: the node refused the RPC credentials"
                ) from exc
            raise AnchorBackendError("rpc-error", f"{method}: {exc}") from exc
        except JsonRpcTransportError as exc:
            raise AnchorBackendError("node-unreachable", f"{method}: {exc}") from exc

    def _batch(self, method: str, params: Sequence[dict[str, Any]]) -> list[Any]:
        """``method`` once per ``params`` in one request; the results in order."""
        try:
            replies = self._rpc.batch([(method, p) for p in params])
        except JsonRpcCallError as exc:
            raise _fault(method, exc) from exc
        except JsonRpcTransportError as exc:
            raise AnchorBackendError("node-unreachable", f"{method}: {exc}") from exc
        for reply in replies:
            if isinstance(reply, JsonRpcCallError):
                raise _fault(method, reply)
        return replies

    def close(self) -> None:
        """Close the pooled connections."""
        self._rpc.close()

    # -- AnchorBackend --------------------------------------------------------------------

    @property
    def chain(self) -> str:
        """``<coin>-<network>`` (asked of the node once; AnchorBackendError while it is down)."""
        if self._chain is None:
            info = self._call("getblockchaininfo")
            self._chain = chain_name(self._coin, str(info["chain"]))
        return self._chain

    def submit_anchor(self, height: int, keymr: bytes) -> bytes:
        """Send the anchor of directory block ``height`` / ``keymr`` (raw 32 bytes); its
        txid (internal order). The same payload sent before and not lost: that txid.

        Raises:
            AnchorBackendError: the node is down, the wallet locked or empty, the
                transaction refused (nothing was sent).
        """
        return self._send(encode_anchor_payload(height, keymr))

    def submit_window(self, window: WindowCommitment) -> bytes:
        """Send a window commitment (66-byte payload); as ``submit_anchor``."""
        return self._send(window.payload())

    def _send(self, payload: bytes) -> bytes:
        with self._lock:
            known = self._by_payload.get(payload)
            if known is not None and not self.lost(known):
                return known
            tip = int(self._call("getblockcount"))
            raw = self._call(
                "createrawtransaction", {"inputs": [], "outputs": [{"data": payload.hex()}]}
            )
            options: dict[str, Any] = {}
            if self._fee_rate is not None:
                options["fee_rate"] = self._fee_rate
            funded = self._call("fundrawtransaction", {"hexstring": raw, "options": options})
            signed = self._call("signrawtransactionwithwallet", {"hexstring": funded["hex"]})
            if not signed.get("complete"):
                errors = "; ".join(str(e.get("error")) for e in signed.get("errors", []))
                raise AnchorBackendError("wallet-locked", f"the wallet did not sign: {errors}")
            txid = from_display_hex(
                self._call("sendrawtransaction", {"hexstring": signed["hex"]}), "txid"
            )
            self._sent[txid] = (payload, tip)
            self._by_payload[payload] = txid
            log.info(
                "anchor transaction %s sent (%d-byte payload, fee %s)",
                to_display_hex(txid),
                len(payload),
                funded.get("fee"),
            )
            return txid

    def _wallet_tx(self, txid: bytes) -> dict[str, Any] | None:
        """``gettransaction`` of ``txid``, None when the wallet does not know it."""
        try:
            return dict(self._call("gettransaction", {"txid": to_display_hex(txid)}))
        except AnchorBackendError as exc:
            cause = exc.__cause__
            if isinstance(cause, JsonRpcCallError) and cause.code == _INVALID_ADDRESS_OR_KEY:
                return None
            raise

    def inclusion(self, txid: bytes) -> Inclusion | None:
        """Where ``txid`` is mined in the best chain, or None (unmined, unknown, or its
        block no longer the best chain's at its height)."""
        tx = self._wallet_tx(txid)
        if tx is None or int(tx.get("confirmations", 0)) <= 0 or "blockhash" not in tx:
            return None
        height = int(tx["blockheight"])
        block_hash = from_display_hex(tx["blockhash"], "blockhash")
        try:
            at_height = from_display_hex(self._call("getblockhash", {"height": height}))
        except AnchorBackendError as exc:
            if isinstance(exc.__cause__, JsonRpcCallError):
                return None  # the best chain is shorter than the block's height now
            raise
        if at_height != block_hash:
            return None
        return Inclusion(txid, block_hash, height, int(tx["blockindex"]), int(tx["confirmations"]))

    def lost(self, txid: bytes) -> bool:
        """True when ``txid`` is conflicted (negative confirmations), unknown to the wallet,
        or unconfirmed and not in the node's pool; such a transaction is abandoned in the
        wallet (its inputs freed) before its anchor is sent again."""
        tx = self._wallet_tx(txid)
        if tx is None:
            return True
        confirmations = int(tx.get("confirmations", 0))
        if confirmations > 0:
            return False
        if confirmations == 0:
            try:
                self._call("getmempoolentry", {"txid": to_display_hex(txid)})
                return False
            except AnchorBackendError as exc:
                if not isinstance(exc.__cause__, JsonRpcCallError):
                    raise
            again = self._wallet_tx(txid)  # mined between the two calls?
            if again is None or int(again.get("confirmations", 0)) != 0:
                return again is None or int(again.get("confirmations", 0)) < 0
        try:
            self._call("abandontransaction", {"txid": to_display_hex(txid)})
        except AnchorBackendError as exc:
            log.info("could not abandon transaction %s: %s", to_display_hex(txid), exc)
        return True

    def inclusion_proof(self, txid: bytes, *, depth: int) -> InclusionProof:
        """Proof of ``txid`` with ``depth`` headers from its block (module docstring).

        Raises:
            NotConfirmed: unmined, fewer than ``depth`` confirmations, or the chain changed
                while the proof was read.
            AnchorBackendError: the node failed.
        """
        shown = to_display_hex(txid)
        inc = self.inclusion(txid)
        if inc is None:
            raise NotConfirmed(f"transaction {shown} is not mined in the best chain")
        if inc.confirmations < depth:
            raise NotConfirmed(f"transaction {shown} has {inc.confirmations} of {depth}")
        tx = self._wallet_tx(txid)
        block = self._call("getblock", {"blockhash": to_display_hex(inc.block_hash)})
        try:
            raw = legacy_serialization(bytes.fromhex(str(tx["hex"]) if tx else ""))
            txids = [from_display_hex(t, "txid") for t in block["tx"]]
        except (LedgerFormatError, ValueError, KeyError, TypeError) as exc:
            raise AnchorBackendError("rpc-error", f"transaction {shown}: {exc}") from exc
        if sha256d(raw) != txid or txids[inc.tx_index] != txid:
            raise NotConfirmed(f"transaction {shown} moved while its proof was read")
        path = merkle_path(txids, inc.tx_index)
        headers = self._headers(inc.block_height, depth)
        parsed = [BlockHeader.unmarshal(h) for h in headers]
        linked = all(parsed[i].prev_hash == parsed[i - 1].hash() for i in range(1, len(parsed)))
        if (
            len(headers) != depth
            or parsed[0].hash() != inc.block_hash
            or not linked
            or root_from_path(txid, inc.tx_index, path) != parsed[0].merkle_root
        ):
            raise NotConfirmed(f"the chain changed while the proof of {shown} was read")
        return InclusionProof(
            self.chain, raw, txid, inc.tx_index, tuple(path), tuple(headers), inc.block_height
        )

    def _headers(self, start: int, count: int) -> list[bytes]:
        """Raw 80-byte headers of the best chain at ``start .. start+count-1``."""
        hashes = self._batch("getblockhash", [{"height": h} for h in range(start, start + count)])
        raws = self._batch("getblockheader", [{"blockhash": h, "verbose": False} for h in hashes])
        return [bytes.fromhex(r) for r in raws]

    # -- health ---------------------------------------------------------------------------

    def tip_height(self) -> int:
        """The node's best block height. AnchorBackendError when it does not answer."""
        return int(self._call("getblockcount"))

    def check(self) -> str:
        """What the chain's readiness check says when all is well (height, balance).

        Raises:
            AnchorBackendError: the node is down, the wallet missing, locked
                (``unlocked_until`` 0) or empty, or an anchor sent here waits unmined for
                ``stuck_blocks`` blocks (``fee-too-low``).
        """
        tip = self.tip_height()
        info = self._call("getwalletinfo")
        if info.get("unlocked_until") == 0:
            raise AnchorBackendError("wallet-locked", "the wallet is locked (walletpassphrase)")
        if float(info.get("balance", 0)) <= 0 and float(info.get("unconfirmed_balance", 0)) <= 0:
            raise AnchorBackendError("wallet-empty", "the wallet has no funds to pay anchors")
        for txid, (_payload, sent_at) in list(self._sent.items()):
            if tip - sent_at < self._stuck_blocks:
                continue
            tx = self._wallet_tx(txid)
            if tx is not None and int(tx.get("confirmations", 0)) == 0:
                raise AnchorBackendError(
                    "fee-too-low",
                    f"anchor {to_display_hex(txid)} unmined {tip - sent_at} blocks after it"
                    " was sent (raise --anchor-fee-rate, or bumpfee it)",
                )
            if tx is not None and int(tx.get("confirmations", 0)) > 0:
                self._sent.pop(txid, None)
        return f"{self.chain} at height {tip}, wallet balance {info.get('balance')}"
