"""Every exception class a package defines derives from that package's one root.

Each package's tree is drawn in its errors module's docstring; this walks every module of
the package (aside from ``__main__`` modules, which start a service, and Alembic's
migration scripts, which run only inside Alembic: ``SKIPPED``) and fails on
an exception class that subclasses only builtins, so a new one cannot drift out of the
tree unnoticed.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from connectors.errors import ConnectorPackageError
from flows.errors import FlowError
from ledger.anchor.errors import AnchorError
from ledger.api.errors import LedgerApiError
from ledger.backup.errors import BackupError
from ledger.core.errors import LedgerFormatError
from ledger.jsonrpc.errors import JsonRpcLayerError
from ledger.node.errors import NodeError
from ledger.wallet.errors import WalletError
from tasks.errors import TaskError

ROOTS: dict[str, type[Exception]] = {
    "ledger.core": LedgerFormatError,
    "ledger.jsonrpc": JsonRpcLayerError,
    "ledger.node": NodeError,
    "ledger.wallet": WalletError,
    "ledger.api": LedgerApiError,
    "ledger.anchor": AnchorError,
    "ledger.backup": BackupError,
    "connectors": ConnectorPackageError,
    "tasks": TaskError,
    "flows": FlowError,
}


#: Module name suffixes not imported: a service's entry point, Alembic's scripts.
SKIPPED = (".__main__", ".migrations.env")
SKIPPED_PACKAGES = (".migrations.versions.",)


def exception_classes(package_name: str) -> list[type[BaseException]]:
    """The exception classes defined in ``package_name``'s modules (not imported ones)."""
    package = importlib.import_module(package_name)
    names = [package_name]
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
        if not info.name.endswith(SKIPPED) and not any(p in info.name for p in SKIPPED_PACKAGES):
            names.append(info.name)
    found: dict[str, type[BaseException]] = {}
    for name in names:
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if (
                inspect.isclass(cls)
                and issubclass(cls, BaseException)
                and cls.__module__.startswith(package_name)
            ):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[key] for key in sorted(found)]


@pytest.mark.parametrize("package_name", sorted(ROOTS))
def test_every_exception_of_a_package_derives_from_its_root(package_name: str) -> None:
    root = ROOTS[package_name]
    classes = exception_classes(package_name)
    assert root in classes  # the root is the package's own
    strays = [f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, root)]
    assert strays == [], f"not under {root.__name__}: {strays}"


def test_builtin_bases_that_callers_catch_are_kept() -> None:
    from connectors.audit import CollectionModeError
    from connectors.folder_files import UnsafeFileError
    from ledger.anchor.backend import NotConfirmed
    from ledger.api.accounts import AccountNotFound
    from ledger.node.store import StoreError
    from tasks.steps import StagePending

    assert issubclass(NotConfirmed, LookupError) and issubclass(AccountNotFound, LookupError)
    assert issubclass(CollectionModeError, ValueError)
    assert issubclass(StoreError, RuntimeError) and issubclass(StagePending, RuntimeError)
    error = UnsafeFileError("not a regular file")
    assert isinstance(error, OSError) and str(error) == "not a regular file"
