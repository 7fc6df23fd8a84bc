"""Configuration of the ledger node (one settings object, env prefix ``NOTARY_NODE_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from ledger.observability.logs import LogFormat
from ledger.serving import RpcServing

#: Network IDs of the directory block header (docs/formats.md §0.7).
MAINNET_ID = 0xFA92E5A2
TESTNET_ID = 0xFA92E5A3
LOCAL_NETWORK_ID = 0xFA92E5A4


class NodeSettings(RpcServing):
    """Settings of one node process.

    Units are in the names: ``block_time_s`` is the whole directory block period in seconds
    (ten minute markers per block), ``commit_window_s`` the accepted distance between a
    commit's or transaction's timestamp and the node clock. ``rpc_user`` /
    ``rpc_password`` (``NOTARY_NODE_RPC_USER`` / ``NOTARY_NODE_RPC_PASSWORD``) lock the
    JSON-RPC route with HTTP basic authentication; ``tls_cert_file`` / ``tls_key_file``
    serve HTTPS (``ledger.serving``, docs/jsonrpc.md §1.1).
    """

    model_config = SettingsConfigDict(env_prefix="NOTARY_NODE_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8088
    data_dir: Path = Path(".notary/node")
    block_time_s: float = Field(default=600.0, gt=0)
    network_id: int = LOCAL_NETWORK_ID
    #: Coin minor units (factoshis) that buy one entry credit (``entry-credit-rate``).
    ec_rate: int = Field(default=1000, gt=0)
    commit_window_s: float = 3600.0
    #: Fund the well-known development addresses at genesis (development network only).
    dev_genesis: bool = True
    #: ``FULL`` makes every acknowledged write survive power loss, ``NORMAL`` only process crashes.
    sqlite_synchronous: str = "FULL"
    #: Reveals received before their commit (or chain) are held; at most this many at once
    #: and this many entry bytes (more are refused until commits arrive or they expire
    #: after ``commit_window_s``). Nothing pays for a held reveal, hence the cap.
    max_held_reveals: int = Field(default=10_000, ge=0)
    max_held_reveal_bytes: int = Field(default=32 * 1024 * 1024, ge=0)
    max_body_bytes: int = 1_048_576
    node_name: str = "notary-node"
    #: Python's thread switch interval in the node process (``python -m ledger.node``): short,
    #: so the store writer and signature threads get the GIL back quickly after each I/O.
    gil_switch_interval_s: float = Field(default=0.0005, gt=0)
    #: Seconds between snapshots of the commit replay filter (also written at shutdown):
    #: start-up then reads only the commits journaled after the snapshot.
    commit_filter_snapshot_s: float = Field(default=300.0, gt=0)
    #: Idle seconds before a keep-alive HTTP connection is closed.
    keepalive_s: float = Field(default=5.0, gt=0)
    #: Log lines as ``text`` (people) or ``json`` (log collectors), at ``log_level`` or above
    #: (``python -m ledger.node``; ``notary up`` takes the command line's).
    log_format: LogFormat = "text"
    log_level: str = "warning"
    #: ``/health/ready`` fails when the last block closed longer ago than this, seconds;
    #: None: three block periods plus 5 s.
    ready_max_block_age_s: float | None = Field(default=None, gt=0)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "node.sqlite"

    @property
    def commit_filter_path(self) -> Path:
        """The commit replay filter's snapshot, derived from the journal (rebuilt when
        missing or stale; ``ledger.node.commit_filter``)."""
        return self.db_path.with_suffix(".txfilter")
