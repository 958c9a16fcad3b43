"""The quick start works as typed: every command of the README's first code block (and of the docs'
copies of it) and the viewer line of the fit's closing summary runs from the repository root in a
fresh shell, where ``.venv/bin`` is not on ``PATH``.

A command is read the way bash reads it (``shlex``, comments dropped, ``\\`` continuations joined):

* ``bash setup.sh ARGS``: setup.sh accepts ARGS; its ``--dry-run`` names the command it would run,
  which is checked in turn;
* ``.venv/bin/NAME ...``: the console script exists in the venv the tests run from (the checkout's
  ``.venv`` after setup.sh; a developer's worktree may use another venv);
* a bare ``NAME``: found on ``PATH`` without the venv's ``bin``, as in a new shell;
* every ``--config FILE`` names a file of the checkout.

The default run checks all that without starting a command (``pdx`` alone imports Lightning: seconds
to tens of seconds on a busy 2-core machine); the slow test runs each with ``--help`` (the fit with
``--print_config``, which reads the whole config as typed).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pdx_lightning.runtime.entry import tool_command, tracker_line

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent  # the venv running the tests (ROOT/.venv/bin in CI)
# where each page keeps its quick start: the first ```bash block under this heading
QUICK_STARTS = {"README.md": "## Quick start", "docs/index.md": "## Quick start", "docs/setup.md": "## Set-up"}


def section(text: str, heading: str) -> str:
    """The text of the section that starts at ``heading`` (up to the next heading of its level)."""
    level = heading.split(" ", 1)[0]
    assert f"\n{heading}" in text, f"no {heading!r}"
    return re.split(rf"\n{level} ", text.split(f"\n{heading}", 1)[1], maxsplit=1)[0]


def blocks(text: str, lang: str) -> list[str]:
    """The bodies of the ```lang code blocks in ``text``."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def commands(block: str) -> list[list[str]]:
    """The commands of a shell block, as bash splits them (comments dropped, continuations joined)."""
    return [argv for line in block.replace("\\\n", " ").splitlines() if (argv := shlex.split(line, comments=True))]


def fresh_path() -> str:
    """``PATH`` as a new shell has it: without the venv's ``bin`` (activating a venv adds it)."""
    venvs = {str(VENV_BIN.resolve()), str((ROOT / ".venv" / "bin").resolve())}
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and str(Path(p).resolve()) not in venvs]
    return os.pathsep.join(keep)


def dry_run(args: list[str]) -> tuple[str, list[str]]:
    """setup.sh's ``--dry-run`` for ``args``: whether the set-up is needed and the command it then runs."""
    r = subprocess.run(
        ["bash", "setup.sh", "--dry-run", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, f"bash setup.sh --dry-run {shlex.join(args)}: {r.stderr.strip()}"
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    return lines["set-up"], shlex.split(lines["then"])


def executable(word: str) -> Path | None:
    """The file bash would run for ``word`` from ROOT (``.venv/bin/X``: the tests' venv's X where the
    checkout has no ``.venv``); None where there is none."""
    if "/" not in word:
        found = shutil.which(word, path=fresh_path())
        return Path(found) if found else None
    path = ROOT / word
    if word.startswith(".venv/bin/") and not (ROOT / ".venv").exists():
        path = VENV_BIN / word.removeprefix(".venv/bin/")
    return path if path.is_file() and os.access(path, os.X_OK) else None


def problems(argv: list[str]) -> list[str]:
    """What stops ``argv`` from running as typed from ROOT (empty: nothing)."""
    typed = shlex.join(argv)
    if argv[0] == "bash":
        if argv[1:2] != ["setup.sh"]:
            return [f"{typed}: only `bash setup.sh ...` is known here"]
        return problems(dry_run(argv[2:])[1]) if argv[2:] else []  # plain set-up: nothing runs after it
    out = [] if executable(argv[0]) else [f"{typed}: `{argv[0]}` is not a command in a fresh shell at the root"]
    for flag, value in itertools.pairwise(argv):
        if flag == "--config" and not (ROOT / value).is_file():
            out.append(f"{typed}: no file {value}")
    return out


def quick_start(page: str) -> list[list[str]]:
    return commands(blocks(section((ROOT / page).read_text(), QUICK_STARTS[page]), "bash")[0])


@pytest.mark.parametrize("page", QUICK_STARTS)
def test_quick_start_runs_as_typed(page):
    cmds = quick_start(page)
    assert cmds, f"{page}: no commands in its quick start"
    assert [p for argv in cmds for p in problems(argv)] == []


@pytest.mark.parametrize("page", QUICK_STARTS)
def test_two_commands_fine_tune_and_test(page):
    """One command sets up and fine-tunes, one sets up if needed and tests: setup.sh's --fit and --test."""
    then = [dry_run(argv[2:])[1] for argv in quick_start(page) if argv[:2] == ["bash", "setup.sh"] and argv[2:]]
    assert [".venv/bin/pdx", "fit", "--config", "conf/fit/pdx.yaml"] in then
    assert [".venv/bin/python", "-m", "pytest", "-q"] in then


def test_printed_summaries_run_as_typed():
    """The closing summary the README and the first-run page show names a viewer that runs as typed."""
    for page in ("README.md", "docs/fine-tuning.md"):
        shown = re.findall(r"^TensorBoard: (.*)$", (ROOT / page).read_text(), re.M)
        assert shown, f"{page}: no closing summary"
        assert [p for cmd in shown for p in problems(shlex.split(cmd))] == []


def test_setup_runs_only_when_needed(tmp_path):
    """--fit/--test skip the set-up when .venv/.pdx-setup holds the hash of what it installs from."""
    core = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pdx_lightning/chesscore").glob("*.[ch]"))
    assert {"pdx_lightning/chesscore/pdx_core.c", "pdx_lightning/chesscore/pdx_limits.h"} <= set(core)
    for rel in ("setup.sh", "pyproject.toml", "requirements/lock.txt", *core):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "PDX_UNLOCKED"}

    def state() -> str:
        r = subprocess.run(
            ["bash", "setup.sh", "--dry-run", "--test"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()[0]

    assert state() == "set-up: needed"  # no record
    sources = b"".join((tmp_path / rel).read_bytes() for rel in ("setup.sh", "pyproject.toml", "requirements/lock.txt"))
    sources += b"".join((tmp_path / rel).read_bytes() for rel in core) + b"PDX_UNLOCKED=0\n"
    (tmp_path / ".venv" / ".pdx-setup").write_text(hashlib.sha256(sources).hexdigest() + "\n")
    assert state() == "set-up: up to date (.venv/.pdx-setup)"
    for rel, edit in (
        ("pdx_lightning/chesscore/pdx_limits.h", "\n/* a changed header */\n"),
        ("pyproject.toml", "\n# a changed requirement\n"),
    ):
        kept = (tmp_path / rel).read_bytes()
        with open(tmp_path / rel, "a") as f:
            f.write(edit)
        assert state() == "set-up: needed", rel  # an edit to any of them sets up again
        (tmp_path / rel).write_bytes(kept)
        assert state() == "set-up: up to date (.venv/.pdx-setup)"


def test_setup_refuses_an_unknown_option():
    r = subprocess.run(["bash", "setup.sh", "--fitt"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "setup.sh: unknown option '--fitt' (--fit, --test, --dry-run, --help)\n"


def test_summary_names_the_venvs_tensorboard(tmp_path, monkeypatch):
    """From the project root the venv's viewer is `.venv/bin/tensorboard`; from elsewhere its absolute
    path; either runs as typed without the venv on PATH."""
    from lightning.pytorch.loggers import TensorBoardLogger

    monkeypatch.setenv("PATH", fresh_path())
    assert (VENV_BIN / "tensorboard").is_file(), "tensorboard (a dependency) is not in the tests' venv"
    monkeypatch.chdir(VENV_BIN.parents[1])  # the directory holding the venv: the project root after setup.sh
    line = tracker_line(TensorBoardLogger("runs", name="pdx"), "runs/pdx/version_0")
    assert line == f"TensorBoard: {os.path.relpath(VENV_BIN / 'tensorboard')} --logdir runs/pdx"
    assert not line.split()[1].startswith("/")
    monkeypatch.chdir(tmp_path)
    assert tool_command("tensorboard") == shlex.quote(str(VENV_BIN / "tensorboard"))
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{fresh_path()}")  # an activated venv: the bare name
    assert tool_command("tensorboard") == "tensorboard"
    assert tool_command("no-such-tool-pdx") == "no-such-tool-pdx"  # not beside us: the name, as before


@pytest.mark.slow
def test_quick_start_commands_start(tmp_path):
    """Each quick-start command starts as typed: `--help` (the fit: `--print_config`, reading its config)."""
    env = {**os.environ, "PATH": fresh_path(), "OMP_NUM_THREADS": "1", "PDX_THREADS": "1"}
    seen = set()
    for page in QUICK_STARTS:
        for argv in quick_start(page):
            if argv == ["bash", "setup.sh"]:
                continue  # the set-up itself (what CI's first step runs)
            if argv[:2] == ["bash", "setup.sh"]:
                needed, argv = dry_run(argv[2:])  # noqa: PLW2901  (the command setup.sh runs)
                assert needed.startswith(("needed", "up to date"))
            extra = ["--print_config"] if argv[1:2] == ["fit"] else ["--version"] if "pytest" in argv else ["--help"]
            run = [str(executable(argv[0])), *argv[1:], *extra]
            if shlex.join(run) in seen:
                continue
            seen.add(shlex.join(run))
            r = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
            assert r.returncode == 0, f"{shlex.join(argv)}: {r.stderr[-2000:]}"
