"""The suite's own check that a slow test says so (tests/conftest.py, issue 53): an unmarked test over the limit
fails the session and is named with its time; a marked one does not."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support import REPO

pytestmark = pytest.mark.slow  # each runs pytest in a subprocess (about 5 s)


def _run(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           str(REPO / "tests" / "slow_check_sample.py"), *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


def test_an_unmarked_test_over_the_limit_fails_the_session_and_is_named() -> None:
    done = _run("--slow", "--slow-seconds", "0.2")
    assert done.returncode == 1, done.stdout[-2000:]
    assert "2 passed" in done.stdout and "without the slow mark" in done.stdout
    assert "test_unmarked_that_takes_a_while" in done.stdout.split("without the slow mark")[1]
    assert "test_marked_that_takes_a_while" not in done.stdout.split("without the slow mark")[1]


def test_under_the_limit_the_session_passes() -> None:
    done = _run("--slow", "--slow-seconds", "5")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "2 passed" in done.stdout and "without the slow mark" not in done.stdout


def test_without_slow_the_marked_tests_are_deselected_and_an_explicit_m_chooses_alone() -> None:
    quick = _run()
    assert quick.returncode == 0 and "1 passed, 1 deselected" in quick.stdout, quick.stdout[-2000:]
    only = _run("-m", "slow")
    assert only.returncode == 0 and "1 passed, 1 deselected" in only.stdout, only.stdout[-2000:]
    passed = [line for line in _run("-m", "slow", "-rA").stdout.splitlines() if line.startswith("PASSED")]
    assert len(passed) == 1 and passed[0].endswith("::test_marked_that_takes_a_while"), passed
