"""The `pdx` entry: global --threads / --version, and the lazily re-exported library API."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pdx_lightning import cli


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PDX_THREADS"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def test_default_is_one_thread(clean_env):
    assert cli.apply_threads(None) == 1
    assert os.environ["OMP_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "1"


def test_flag_beats_env_and_users_omp_setting_beats_default(clean_env):
    clean_env.setenv("PDX_THREADS", "3")
    assert cli.apply_threads("2") == 2 and os.environ["OMP_NUM_THREADS"] == "2"
    assert cli.apply_threads(None) == 3
    clean_env.delenv("PDX_THREADS")
    clean_env.setenv("OMP_NUM_THREADS", "4")
    assert cli.apply_threads(None) is None and os.environ["OMP_NUM_THREADS"] == "4"
    assert cli.apply_threads("auto") is None


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1025", "100000000"])
def test_bad_threads_is_one_line_error(bad):
    r = subprocess.run(
        [sys.executable, "-m", "pdx_lightning.cli", "--threads", bad, "data", "--help"], capture_output=True, text=True
    )
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--threads" in r.stderr


def test_global_options_only_before_the_command():
    opts, rest = cli._global_options(["--threads", "2", "fit", "--threads", "5"])
    assert opts.threads == "2" and rest == ["fit", "--threads", "5"]
    opts, rest = cli._global_options(["--threads=2", "arena", "--model", "a"])
    assert opts.threads == "2" and rest == ["arena", "--model", "a"]


def test_threads_reach_the_command_process():
    code = (
        "import sys, torch; from pdx_lightning import cli; cli.apply_threads(sys.argv[1]); "
        "print(torch.get_num_threads())"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PDX_THREADS")}
    out = subprocess.run([sys.executable, "-c", code, "2"], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "2"


def test_version():
    r = subprocess.run([sys.executable, "-m", "pdx_lightning.cli", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("pdx 0.")


def test_root_reexports_library_entry_points():
    import pdx_lightning as p
    from pdx_lightning.chesscore import encoding, moves
    from pdx_lightning.rl import objectives

    assert p.encode_boards is encoding.encode_boards and p.legal_mask is moves.legal_mask
    assert p.move_to_index is moves.move_to_index and p.forward_kl is objectives.forward_kl
    with pytest.raises(AttributeError):
        p.no_such_name  # noqa: B018
