"""The README's two test commands are the ones pyproject.toml and CI run: the default run leaves out
the slow tests, ``-m slow`` runs exactly them, and ``.ci/run`` runs both, exactly as the README shows
them (its "## Tests" section)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ".venv/bin/python -m pytest"
SLOW = ".venv/bin/python -m pytest -m slow"


def _setup_block() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def test_the_default_run_deselects_slow_tests_and_the_marker_is_registered(pytestconfig):
    addopts = pytestconfig.getini("addopts")
    assert "-m" in addopts and addopts[addopts.index("-m") + 1] == "not slow", addopts
    assert any(m.startswith("slow:") for m in pytestconfig.getini("markers"))


def test_the_readme_shows_both_commands_and_ci_runs_both():
    block = _setup_block()
    assert block == [f"{DEFAULT} -q", f"{DEFAULT} -q -m slow"], block  # the README shows what CI runs
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci.index(f"{DEFAULT} -q") < ci.index(f"{DEFAULT} -q -m slow"), ci


# ---- a green run prints no warning: every warning fails its test (pyproject's filterwarnings) ----------
NEW_WARNING = """
import warnings

import pytest


def test_a_new_warning():
    warnings.warn("a warning nobody has looked at", UserWarning)


def test_an_expected_warning():
    with pytest.warns(UserWarning, match="expected"):
        warnings.warn("expected", UserWarning)


def test_no_warning():
    pass
"""


def test_a_new_warning_fails_the_test_that_raised_it(tmp_path):
    """pyproject's filterwarnings, run as the suite runs them: a new warning fails its test (with the
    warning's text), a warning the test expects with pytest.warns passes, and the rest is untouched."""
    (tmp_path / "test_warned.py").write_text(NEW_WARNING)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path)]
        + ["-n", "0", "-p", "no:cacheprovider", "-q", str(tmp_path / "test_warned.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "1 failed, 2 passed" in out and "UserWarning: a warning nobody has looked at" in out, out


def test_each_ignored_warning_says_why(pytestconfig):
    """Every filter but the first ("error") ignores one known third-party warning, under a comment
    that says why it is harmless."""
    filters = pytestconfig.getini("filterwarnings")
    assert filters[0] == "error", filters
    lines = (ROOT / "pyproject.toml").read_text().split("[tool.pytest.ini_options]", 1)[1].splitlines()
    for f in filters[1:]:
        assert f.startswith("ignore:"), f
        (i,) = [i for i, line in enumerate(lines) if line.strip() == f'"{f}",']
        assert lines[i - 1].strip().startswith("#"), f"{f}: no comment above it in pyproject.toml"


def test_the_readme_commands_get_two_workers_and_a_run_of_named_tests_none(pytestconfig):
    """`-n auto` in addopts; tests/conftest.py makes "auto" two workers for a run of the testpaths (the
    README's commands) and none for named files or tests."""
    from conftest import pytest_xdist_auto_num_workers as workers

    addopts = pytestconfig.getini("addopts")
    assert addopts[addopts.index("-n") + 1] == "auto", addopts
    whole, named = (
        SimpleNamespace(args_source=s) for s in (pytest.Config.ArgsSource.TESTPATHS, pytest.Config.ArgsSource.ARGS)
    )
    if "PDX_TEST_WORKERS" not in os.environ:
        assert workers(named) == 0
        assert workers(whole) == (2 if (os.cpu_count() or 1) > 1 else 0)
