"""The bundled development stack: node, wallet, publishing API and anchoring in one process.

``Stack.prepare()`` lays out the data folder (``node/``, ``wallet/``, ``api/``), imports
the well-known development keys into the wallet (``ledger.devnet``), makes sure an API
account exists whose key is kept in ``<data_dir>/api-key`` (file mode 0600; the API itself
stores only its hash), and writes the API's callback HMAC key to
``<data_dir>/callback-secret`` (mode 0600), where ``notary collect --listen`` reads it.
``Stack.serve()`` runs the four services (the fourth, ``anchor/``, anchors directory blocks
into the bundled proof-of-work chain) on loopback until told to stop. Every service binds
``host`` (127.0.0.1 unless told otherwise) and answers ``/health/live``, ``/health/ready``
and ``/metrics`` on its own port (open: no credentials). Their uvicorn servers keep the
process's logging set-up (``ledger.observability.logs``; the command line configures it).

Locking the JSON-RPC services (docs/jsonrpc.md §1.1): with RPC credentials (``rpc_auth``,
``rpc_user``, ``rpc_password``: ``Stack.rpc_credentials``) the node, the wallet and the
anchoring service answer only requests carrying them, and every client inside the stack
(the API's gateways, the wallet's node link, the anchoring service's node client) sends
them. ``prepare()`` keeps them in ``<data_dir>/rpc-credentials`` (``user:password``, mode
0600), where the pipeline finds them (``flows.settings``); a data folder once locked stays
locked on the next start until ``rpc_auth`` is False.

In process (``in_process_rpc``, the default): the API's worker calls the node's and the
wallet's JSON-RPC endpoints directly on the stack's event loop
(``ledger.jsonrpc.local.LocalJsonRpcClient``: same methods, validation, batch handling
and error objects, no HTTP and no JSON text, no credentials needed), while the services
serve; a stopped service answers as an unreachable one does. The API's readiness checks
and Connect reads, the wallet's node link and the anchoring service still call over HTTP,
as every client outside the process does.

``Stack.stores()`` lists the data folder's stores in the order ``notary backup`` copies
them (``ledger.backup``).

``notary demo`` runs a local test timestamp authority beside the stack when OpenSSL is
there (``ledger.stack.local_tsa``: ``open_tsa``, ``LocalTsaServer``), given to the
anchoring service as any TSA is (``tsa_urls``, ``tsa_ca_file``).
"""

from ledger.stack.compose import Stack
from ledger.stack.local_tsa import (
    LOCAL_TSA_NAME,
    LocalTsaServer,
    TsaAuthority,
    find_openssl,
    open_tsa,
)
from ledger.stack.running import StackThread, wait_until_healthy
from ledger.stack.settings import StackSettings

__all__ = [
    "LOCAL_TSA_NAME",
    "LocalTsaServer",
    "Stack",
    "StackSettings",
    "StackThread",
    "TsaAuthority",
    "find_openssl",
    "open_tsa",
    "wait_until_healthy",
]
