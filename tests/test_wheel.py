"""The wheel is the product: built from this tree, installed into a fresh virtualenv outside the checkout
(no editable install, nothing of the repository on ``sys.path``), run from an empty directory.

The fresh environment gets the wheel with ``--no-deps``; its dependencies (torch, Lightning, ...) are
made visible from the test's own environment by a ``.pth`` line naming that environment's
site-packages. A directory added that way has its own ``.pth`` files ignored, so the checkout's
editable-install hook there is never run: ``pdx_lightning`` can only come from the wheel, which the
first command checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict, timeout: float = 600) -> str:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["OMP_NUM_THREADS"] = "1"
    # the build backend from this environment (setuptools >= 74.1 is a test requirement of the tree)
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(ROOT)],
        tmp,
        env,
    )
    (wheel,) = dist.glob("pdx_lightning-*.whl")
    fresh = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(fresh)
    py = fresh / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp, env).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], tmp, env)
    empty = tmp / "empty"
    empty.mkdir()
    return fresh, env | {"PATH": f"{fresh / 'bin'}:{env.get('PATH', '')}"}


def test_the_wheel_runs_outside_the_checkout(installed):
    fresh, env = installed
    empty = fresh.parent / "empty"
    pdx = str(fresh / "bin" / "pdx")
    where = _run(
        [
            str(fresh / "bin" / "python"),
            "-c",
            "import pdx_lightning, pdx_lightning.files.resources as r; print(pdx_lightning.__file__); "
            "print(r.package_dir('data'))",
        ],
        empty,
        env,
    )
    assert str(ROOT) not in where and str(fresh) in where  # the wheel's copy, not the checkout
    assert _run([pdx, "--version"], empty, env).startswith("pdx ")
    assert "pdx:fit/small" in _run([pdx, "config", "list"], empty, env)
    # a 2-step fit from a packaged preset (its validation suite, data/tactics.csv, is the shipped one)
    out = _run(
        [
            pdx,
            "fit",
            "--config",
            "pdx:fit/small",
            "--trainer.max_steps",
            "2",
            "--model.selfplay.n_games",
            "4",
            "--model.algorithm.micro_batch",
            "4",
            "--model.selfplay.max_plies",
            "10",
            "--model.warmup_steps",
            "1",
            "--trainer.enable_progress_bar",
            "false",
        ],
        empty,
        env,
    )
    assert (empty / "runs").is_dir(), out
    assert list((empty / "runs").rglob("last.ckpt"))
    # the bundled network on a packaged suite
    scored = _run(
        [
            pdx,
            "eval",
            "puzzles",
            "--model",
            "base:small",
            "--suite",
            "data/tactics.csv",
            "--sample",
            "20",
            "--json",
            "scores.json",
        ],
        empty,
        env,
    )
    assert (empty / "scores.json").is_file(), scored
    # the arena with its default openings
    played = _run(
        [pdx, "arena", "--model", "random:tiny", "--model", "random:tiny:1", "--games", "2", "--json", "arena.json"],
        empty,
        env,
    )
    assert (empty / "arena.json").is_file(), played
    assert sorted(p.name for p in empty.iterdir()) == ["arena.json", "runs", "scores.json"]
