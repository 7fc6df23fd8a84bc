"""The command line's RFC 3161 flags: ``notary up --tsa`` needs a readable ``--tsa-ca``,
``notary verify --tsa-ca`` refuses a file without certificates; both before any work."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from flows.cli.exit_codes import ExitCode

ENV = {"COLUMNS": "300"}


def test_up_with_a_tsa_needs_its_ca(tmp_path: Path) -> None:
    args = ["up", "--data-dir", str(tmp_path), "--no-prefect", "--tsa", "http://127.0.0.1:9/tsr"]
    result = CliRunner().invoke(app, args, env=ENV)
    assert result.exit_code == ExitCode.USAGE
    assert "--tsa needs --tsa-ca" in result.output
    empty = tmp_path / "empty.pem"
    empty.write_text("no certificate here\n")
    result = CliRunner().invoke(app, [*args, "--tsa-ca", str(empty)], env=ENV)
    assert result.exit_code == ExitCode.USAGE
    assert "--tsa-ca" in result.output and "empty.pem" in result.output
    assert not (tmp_path / "node").exists()  # refused before anything was started


def test_verify_refuses_a_trust_store_without_certificates(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("x")
    (tmp_path / "doc.txt.proof.json").write_text("{}")
    (tmp_path / "ca.pem").write_text("")
    result = CliRunner().invoke(
        app,
        ["verify", str(tmp_path / "doc.txt"), "--proof", str(tmp_path / "doc.txt.proof.json"),
         "--tsa-ca", str(tmp_path / "ca.pem")],
        env=ENV,
    )  # fmt: skip
    assert result.exit_code == ExitCode.USAGE
    assert "--tsa-ca" in result.output
