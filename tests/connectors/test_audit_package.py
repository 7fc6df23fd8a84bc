"""The shape of ``connectors.audit``: one public face, names defined once, repositories
composed over one engine, one dialect seam."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import connectors.audit as audit
from connectors.audit.batches import Batches
from connectors.audit.collections import Collections
from connectors.audit.dialect import PostgresDialect, SqliteDialect, dialect_for
from connectors.audit.notarizations import Notarizations
from connectors.audit.proofs import Proofs
from connectors.audit.runs import Runs

SUBMODULES = sorted(
    f"connectors.audit.{m.name}" for m in pkgutil.iter_modules(audit.__path__) if not m.ispkg
)


def test_the_package_exports_each_public_name_once_and_sorted() -> None:
    assert audit.__all__ == sorted(audit.__all__, key=lambda n: (not n.isupper(), n))
    assert len(set(audit.__all__)) == len(audit.__all__)
    for name in audit.__all__:
        assert getattr(audit, name) is not None, name


@pytest.mark.parametrize("module_name", SUBMODULES)
def test_a_module_lists_only_what_it_defines(module_name: str) -> None:
    """No re-exports behind the package: a record name is exported by ``records`` and the
    package only, a table by ``models`` only."""
    module = importlib.import_module(module_name)
    for name in getattr(module, "__all__", []):
        value = getattr(module, name)
        defined_in = getattr(value, "__module__", module_name)
        if inspect.isclass(value) or inspect.isfunction(value):  # not typing aliases
            assert defined_in == module_name, f"{module_name} re-exports {name}"


def test_every_record_name_is_exported_by_records_and_the_package_only() -> None:
    records = importlib.import_module("connectors.audit.records")
    for module_name in SUBMODULES:
        if module_name == "connectors.audit.records":
            continue
        exported = set(getattr(importlib.import_module(module_name), "__all__", []))
        assert not exported & set(records.__all__), module_name
    assert set(records.__all__) <= set(audit.__all__)


def test_the_store_composes_one_repository_per_aggregate_over_one_engine() -> None:
    with audit.AuditStore("sqlite://") as store:
        parts = {
            Notarizations: store.notarizations,
            Batches: store.batches,
            Proofs: store.proofs,
            Collections: store.collections,
            Runs: store.runs,
        }
        for kind, repository in parts.items():
            assert type(repository) is kind
            assert repository._engine is store.engine
        assert store.batches._trees is store.proofs._trees  # rebuilt trees kept once


def test_the_dialect_seam_picks_the_backend_and_refuses_others() -> None:
    assert isinstance(dialect_for("sqlite"), SqliteDialect)
    assert isinstance(dialect_for("postgresql"), PostgresDialect)
    assert dialect_for("sqlite") is dialect_for("sqlite")  # built once
    with pytest.raises(ValueError, match="mysql"):
        dialect_for("mysql")
