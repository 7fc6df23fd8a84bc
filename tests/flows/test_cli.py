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


def test_mode_option_reaches_the_flow_and_a_refused_switch_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    import flows.cli.prefect_server as prefect_server
    import flows.cli.progress as progress
    import flows.notarize_folder as notarize_module
    from connectors.audit import CollectionModeError

    seen: list[str] = []

    def refused(folder: str, name: str, settings: object, wait: bool) -> dict[str, object]:
        seen.append(settings.publish_mode)  # type: ignore[attr-defined]
        raise CollectionModeError(name, registered="clear", requested=seen[-1])

    monkeypatch.setattr(prefect_server, "prepare_prefect", lambda settings: None)
    monkeypatch.setattr(progress, "watch_collection", lambda *a, **k: contextlib.nullcontext())
    monkeypatch.setattr(notarize_module, "notarize_folder", refused)
    (tmp_path / "api-key").write_text("key\n")
    args = ["notarize", str(tmp_path), "--data-dir", str(tmp_path), "--mode", "entry"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == ExitCode.USAGE, result.output
    assert seen == ["entry"]
    assert "--mode clear" in " ".join(result.output.split())
    monkeypatch.setenv("NOTARY_PUBLISH_MODE", "clear")
    CliRunner().invoke(app, args[:-2])
    assert seen == ["entry", "clear"]
    bad = CliRunner().invoke(app, [*args[:-1], "public"])
    assert bad.exit_code == ExitCode.USAGE and seen == ["entry", "clear"]


@pytest.mark.parametrize(
    ("counts", "code"),
    [
        ({}, ExitCode.OK),
        ({"hash_errors": 1}, ExitCode.INCOMPLETE),
        ({"documents_waiting": 2}, ExitCode.INCOMPLETE),
        ({"documents_failed": 1}, ExitCode.INCOMPLETE),
        ({"publish_failed": 1}, ExitCode.INCOMPLETE),
        ({"receipts_rejected": 1}, ExitCode.INCOMPLETE),
    ],
)
def test_notarize_exits_incomplete_unless_every_document_got_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counts: dict[str, int], code: ExitCode
) -> None:
    import flows.cli.commands.notarize as notarize_command
    from flows.run_summary import RunSummary

    summary = RunSummary(str(tmp_path), "c", "ab" * 32, documents_seen=3, **counts)
    monkeypatch.setattr(notarize_command, "run_folder_flow", lambda *a, **k: summary.as_dict())
    (tmp_path / "api-key").write_text("key\n")
    result = CliRunner().invoke(app, ["notarize", str(tmp_path), "--data-dir", str(tmp_path)])
    assert result.exit_code == code, result.output


def test_output_to_a_pipe_is_not_wrapped_at_80_columns(tmp_path: Path) -> None:
    """Under cron or in a pipe (no terminal, no ``COLUMNS``), a long path stays on one line
    so that a script or a log search finds it whole."""
    missing = tmp_path / ("deep-folder-name-" * 6) / "nope"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("NOTARY_")}
    env["PYTHONPATH"] = str(REPO)
    result = subprocess.run(
        [sys.executable, "-m", "flows.cli", "notarize", str(missing)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert len(str(missing)) > 120
    assert any(str(missing) in line for line in result.stderr.splitlines()), result.stderr
