"""Wallet errors as JSON-RPC errors, in one place (docs/formats.md §9.2; walletd
``wsapi/errors.go``).

| raised | JSON-RPC error |
|---|---|
| WalletLockedError | -32001 Wallet is locked |
| IncorrectPassphraseError | -32003 Incorrect passphrase |
| AddressError (bad FA/EC/Fs/Es/idpub/idsec text) | -32602 data "Invalid Address" |
| UnknownKeyError (well-formed, not held) | -32602 data "Wallet: address not found" / "Wallet: identity key not found" |
| InvalidMnemonicError, NotAnIdentityError, DecodeError, LimitError | -32602 data: the reason |
| ChainNotFoundError | -32009 Missing Chain Head |
| any other WalletError (TransactionError, FeeError, NodeUnavailableError, ...) | -32603 data: the reason |

Messages never carry secrets: the wallet's errors are built without them, and an
``AddressError`` (whose text may echo its input) is reduced to "Invalid Address".
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ledger.core.errors import AddressError, LedgerFormatError
from ledger.jsonrpc import (
    IncorrectPassphrase,
    InternalError,
    InvalidParams,
    MissingChainHead,
    WalletLocked,
)
from ledger.wallet.errors import (
    ChainNotFoundError,
    IncorrectPassphraseError,
    InvalidMnemonicError,
    NotAnIdentityError,
    UnknownKeyError,
    WalletError,
    WalletLockedError,
)

__all__ = ["rpc_errors", "translated_errors"]

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def translated_errors() -> Iterator[None]:
    """Re-raise wallet and format errors from the block as JSON-RPC errors (module table)."""
    try:
        yield
    except WalletLockedError:
        raise WalletLocked() from None
    except IncorrectPassphraseError:
        raise IncorrectPassphrase() from None
    except UnknownKeyError as exc:
        raise InvalidParams(str(exc)) from None
    except AddressError:
        raise InvalidParams("Invalid Address") from None
    except (InvalidMnemonicError, NotAnIdentityError, LedgerFormatError) as exc:
        raise InvalidParams(str(exc)) from None
    except ChainNotFoundError:
        raise MissingChainHead() from None
    except WalletError as exc:
        raise InternalError(str(exc)) from None


def rpc_errors(handler: F) -> F:
    """Decorate a sync or async handler so that it raises only JSON-RPC errors."""
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def async_wrapper(*args: Any) -> Any:
            with translated_errors():
                return await handler(*args)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(handler)
    def wrapper(*args: Any) -> Any:
        with translated_errors():
            return handler(*args)

    return wrapper  # type: ignore[return-value]
