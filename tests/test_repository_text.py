"""The repository explains itself: every path its prose names exists, and no work-log citations.

Prose is what a reader follows: Markdown and JavaScript files, and the docstrings and
comments of Python modules (string literals in code are data, not prose, and are not read).
A path is a run of the repository's top-level folders' names and below it
(``ledger/core/proof/verify.py``, ``docs/``); ones with a wildcard or a placeholder
(``test_blocks_*.py``, ``<path>``) and the benchmarks' generated results are not checked.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP_FOLDERS = ("ledger", "connectors", "tasks", "flows", "deployments", "tests", "bench", "docs")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP_FOLDERS) + r")/[\w./-]*)")
# Written by the benchmarks, ignored by git.
GENERATED = ("bench/results/",)
# Issue and session numbers belong to the tracker, not to the tree.
CITATION = re.compile(r"\b(?:[Ii]ssue|[Ss]top) #?\d+\b")


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return [ROOT / name for name in listed if name and (ROOT / name).is_file()]


def _python_prose(text: str) -> Iterator[str]:
    """Docstrings and comments of one Python module."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.string


def _prose(path: Path) -> Iterator[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        yield from _python_prose(text)
    elif path.suffix in {".md", ".js"} or path.name in {"Makefile", "pyproject.toml"}:
        yield text


def _prose_files() -> list[Path]:
    return [
        path
        for path in _tracked_files()
        if not path.relative_to(ROOT).as_posix().startswith("tests/vectors/")
    ]


def _named_paths(prose: str) -> set[str]:
    found = set()
    for match in PATH.finditer(prose):
        name = match.group(1).rstrip(".")
        end = match.end()
        if end < len(prose) and prose[end] in "*<{":
            continue
        if name.startswith(GENERATED):
            continue
        found.add(name)
    return found


def test_every_path_named_in_prose_exists() -> None:
    missing = {}
    for path in _prose_files():
        for text in _prose(path):
            for name in _named_paths(text):
                if not (ROOT / name).exists():
                    missing.setdefault(path.relative_to(ROOT).as_posix(), set()).add(name)
    assert not missing, f"paths named in prose that do not exist: {missing}"


def test_no_work_log_citations() -> None:
    cited = {}
    for path in _prose_files():
        for text in _prose(path):
            hits = CITATION.findall(text)
            if hits:
                cited.setdefault(path.relative_to(ROOT).as_posix(), set()).update(hits)
    assert not cited, f"issue or stop numbers in the repository's prose: {cited}"


@pytest.mark.parametrize(
    ("prose", "expected"),
    [
        ("see `ledger/core/proof/verify.py`.", {"ledger/core/proof/verify.py"}),
        ("vectors in tests/ledger/core/test_blocks_*.py", set()),
        ("results in bench/results/summary.json", set()),
        ("the folder docs/ and x/ledger/y", {"docs/"}),
    ],
)
def test_named_paths_reads_what_a_reader_would(prose: str, expected: set[str]) -> None:
    assert _named_paths(prose) == expected


def test_a_missing_path_is_found(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text('"""Built from ``ledger/core/no_such_module.py``."""\nx = "docs/a.pdf"\n')
    named = set().union(*(_named_paths(text) for text in _prose(module)))
    assert named == {"ledger/core/no_such_module.py"}
    assert not (ROOT / "ledger/core/no_such_module.py").exists()
