"""The PostgreSQL switch: skip without it, fail with it, pass when the server answers.

Each case runs pytest in a subprocess (``pytester``) on a one-test module that asks for
the ``postgres_url`` fixture, with ``NOTARY_TEST_POSTGRES_URL`` pointing at a loopback port
nothing listens on, or at the real server.
"""

from __future__ import annotations

import pytest

from tests.harness.ports import free_port
from tests.harness.postgres import REQUIRE_ENV, REQUIRE_OPTION
from tests.harness.processes import ROOT

CONFTEST = 'pytest_plugins = ["tests.harness.postgres"]\n'
MODULE = """
def test_needs_postgres(postgres_url):
    assert postgres_url.startswith("postgresql")
"""


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """Run the one-test module against ``url``, with ``env`` and pytest ``args``."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(MODULE)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv(REQUIRE_ENV, raising=False)

    def run_with(url: str, *args: str, env: dict[str, str] | None = None) -> pytest.RunResult:
        monkeypatch.setenv("NOTARY_TEST_POSTGRES_URL", url)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        return pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider", *args)

    return run_with


def closed_url() -> str:
    return f"postgresql+psycopg://127.0.0.1:{free_port()}/test"


def test_without_the_switch_an_unreachable_server_skips_with_the_reason(run) -> None:
    result = run(closed_url())
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*PostgreSQL not reachable at postgresql+psycopg://*"])


@pytest.mark.parametrize("value", ["0", "", "no"])
def test_a_false_switch_value_still_skips(run, value: str) -> None:
    run(closed_url(), env={REQUIRE_ENV: value}).assert_outcomes(skipped=1)


@pytest.mark.parametrize(
    ("args", "env"),
    [((), {REQUIRE_ENV: "1"}), ((), {REQUIRE_ENV: "true"}), ((REQUIRE_OPTION,), {})],
    ids=["env-1", "env-true", "option"],
)
def test_with_the_switch_an_unreachable_server_fails_with_the_reason(
    run, args: tuple[str, ...], env: dict[str, str]
) -> None:
    url = closed_url()
    result = run(url, *args, env=env)
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*PostgreSQL is required here*", f"PostgreSQL not reachable at {url}: *refused*"]
    )


@pytest.mark.postgres
def test_with_the_switch_a_reachable_server_runs_the_test(run, postgres_url: str) -> None:
    run(postgres_url, REQUIRE_OPTION, env={REQUIRE_ENV: "1"}).assert_outcomes(passed=1)
