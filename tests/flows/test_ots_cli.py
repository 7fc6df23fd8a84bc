"""The command line's OpenTimestamps flags: ``notary up --ots-calendar URL --ots-min N``
reach the anchoring service's settings; a minimum above the calendars given is refused
before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.cli.exit_codes import ExitCode
from ledger.stack import Stack, StackSettings

ENV = {"COLUMNS": "300"}


def test_up_refuses_more_answers_than_calendars(tmp_path: Path) -> None:
    args = ["up", "--data-dir", str(tmp_path), "--no-prefect"]
    args += ["--ots-calendar", "http://127.0.0.1:9", "--ots-min", "2"]
    result = CliRunner().invoke(app, args, env=ENV)
    assert result.exit_code == ExitCode.USAGE
    assert "--ots-min 2 but only 1 --ots-calendar" in result.output
    assert not (tmp_path / "node").exists()  # refused before anything was started


def test_the_stack_hands_its_calendars_to_the_anchoring_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOTARY_ANCHOR_OTS_CALENDARS", raising=False)
    calendars = ["http://127.0.0.1:9", "http://127.0.0.1:10"]
    stack = Stack(
        StackSettings(
            data_dir=tmp_path,
            ots_calendars=calendars,
            ots_min=2,
            ots_headers_url="http://127.0.0.1:11/api",
        )
    )
    anchor = stack.anchor_settings()
    assert (anchor.ots_calendars, anchor.ots_min) == (calendars, 2)
    assert anchor.ots_headers_url == "http://127.0.0.1:11/api"
    plain = Stack(StackSettings(data_dir=tmp_path / "plain")).anchor_settings()
    assert (plain.ots_calendars, plain.ots_min, plain.ots_headers_url) == ([], 1, None)


def test_the_environment_names_the_calendars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTARY_ANCHOR_OTS_CALENDARS", "http://a.test, http://b.test")
    monkeypatch.setenv("NOTARY_ANCHOR_OTS_MIN", "2")
    anchor = Stack(StackSettings(data_dir=tmp_path)).anchor_settings()
    assert (anchor.ots_calendars, anchor.ots_min) == (["http://a.test", "http://b.test"], 2)
