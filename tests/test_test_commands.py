"""The README's two test commands are the ones pyproject.toml and CI run: the default run leaves out
the slow tests, ``-m slow`` runs exactly them, and ``.ci/run`` runs both, exactly as the README shows
them (its "## Tests" section)."""

from __future__ import annotations

from pathlib import Path

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
