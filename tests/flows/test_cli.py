"""The ``notary`` command line as a whole: its commands, entry points and exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import flows.cli.application as cli_app
from flows.cli import app, main
from flows.cli.exit_codes import ExitCode

REPO = Path(__file__).resolve().parents[2]
COMMANDS = [
    "up",
    "demo",
    "notarize",
    "collect",
    "verify",
    "watch",
    "table",
    "report",
    "backup",
    "restore",
]
GROUPS = ["proof", "accounts"]


def test_exit_codes_are_the_documented_numbers() -> None:
    assert [(c.name, int(c)) for c in ExitCode] == [
        ("OK", 0),
        ("INCOMPLETE", 1),
        ("USAGE", 2),
        ("UNREACHABLE", 3),
        ("INTERRUPTED", 130),
    ]


def test_every_command_is_registered() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == ExitCode.OK
    listed = [line.split()[1] for line in result.output.splitlines() if line.startswith("│ ")]
    assert [name for name in listed if name in COMMANDS + GROUPS] == COMMANDS + GROUPS


def test_python_dash_m_runs_the_same_application() -> None:
    env = os.environ | {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "proof", "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "export" in done.stdout


def test_ctrl_c_exits_with_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_app, "app", interrupted)
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == ExitCode.INTERRUPTED == 130


def test_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["notarize", str(tmp_path / "nope")], env={"COLUMNS": "300"})
    assert result.exit_code == ExitCode.USAGE
    assert "is not a folder" in result.output
