"""The core's one exception tree: its shape, and that ``ledger.core`` raises nothing else."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import ledger.core
from ledger.core.errors import (
    AddressError,
    DecodeError,
    LedgerFormatError,
    LimitError,
    MerkleProofError,
    NotInBlockError,
    PositionError,
    SignatureError,
)
from ledger.core.proof.steps import ProofError, Step
from ledger.core.receipt import ReceiptError

CORE = Path(ledger.core.__file__).parent


def test_the_tree_drawn_in_the_errors_docstring() -> None:
    for leaf in (DecodeError, AddressError, SignatureError, LimitError, MerkleProofError):
        assert leaf.__bases__ == (LedgerFormatError,)
    assert issubclass(LedgerFormatError, ValueError)
    assert ReceiptError.__bases__ == (MerkleProofError,)
    assert ProofError.__bases__ == (LedgerFormatError,)
    assert not issubclass(ProofError, MerkleProofError)
    assert PositionError.__bases__ == (LedgerFormatError, IndexError)
    assert NotInBlockError.__bases__ == (LedgerFormatError, LookupError)


def test_proof_error_carries_its_evidence() -> None:
    error = ProofError(Step.FILE_HASH, "no", index=3, expected=b"\x01", computed=b"\x02")
    assert (error.step, error.reason, error.index) == (Step.FILE_HASH, "no", 3)
    assert (error.expected, error.computed) == (b"\x01", b"\x02")
    assert str(error) == "step 1 (file hash): no (expected 01, computed 02)"


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _raised_classes() -> list[tuple[str, int, type]]:
    """Every exception class named in a ``raise Name(...)`` under ``ledger/core``."""
    found = []
    for path in sorted(CORE.rglob("*.py")):
        module = importlib.import_module(_module_name(path))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                target = getattr(module, func.id, None) if isinstance(func, ast.Name) else None
                if inspect.isclass(target):
                    found.append((_module_name(path), node.lineno, target))
    return found


def test_ledger_core_raises_only_ledger_format_errors() -> None:
    raised = _raised_classes()
    assert len(raised) > 100
    strays = [
        (m, line, c.__name__) for m, line, c in raised if not issubclass(c, LedgerFormatError)
    ]
    assert strays == []
