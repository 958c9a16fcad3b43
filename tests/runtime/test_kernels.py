"""The CPU kernel hold (runtime/kernels.py): the same weights whatever vector ISA the machine offers.

The two ``pdx fit`` runs of each pair differ only in what the environment says the CPU offers (the
widest kernels, ``ATEN_CPU_CAPABILITY=avx512`` etc., as on an AVX-512 machine, or AVX2, as on an AVX2
one). Held (the default) they must end with bit-identical weights; with ``--kernels native`` on this
AVX-512 machine they do not, which is what the hold is for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pdx_lightning.cli import main as pdx_main
from pdx_lightning.runtime import kernels
from pdx_lightning.runtime.checkpoint_read import read_checkpoint
from pdx_lightning.runtime.environment import environment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_fit import CONF, tiny_fit_args

# as the machine offers (an AVX-512 CPU's widest kernels), and as an AVX2 machine would run
OFFERED = {
    "ATEN_CPU_CAPABILITY": "avx512",
    "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16",
    "MKL_ENABLE_INSTRUCTIONS": "AVX512",
}
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
ISA_VARS = (*kernels.HOLD, "DNNL_MAX_CPU_ISA", kernels.ENV)

needs_avx512 = pytest.mark.skipif(
    kernels.cpu_offers() != "avx512", reason=f"the CPU offers {kernels.cpu_offers()}, not AVX-512"
)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ISA_VARS}
    return {**env, "PDX_THREADS": "1", "OMP_NUM_THREADS": "1", **extra}


def _fit_weights(work: Path, pdx_flags: list[str], isa_env: dict[str, str]) -> dict[str, torch.Tensor]:
    """A 3-step tiny ``pdx fit`` (the default config's chessformer, 4 games) in ``work``; its weights."""
    work.mkdir()
    cmd = [
        sys.executable,
        "-m",
        "pdx_lightning.cli",
        *pdx_flags,
        "fit",
        "--config",
        CONF,
        *tiny_fit_args(3),
        "--seed_everything",
        "5",
        "--trainer.logger",
        "false",
        "--trainer.callbacks",
        "null",
        "--trainer.callbacks+=lightning.pytorch.callbacks.ModelCheckpoint",
        "--trainer.callbacks.dirpath",
        str(work),
        "--trainer.callbacks.save_last",
        "true",
        "--trainer.default_root_dir",
        str(work),
    ]
    proc = subprocess.run(cmd, cwd=work, env=_clean_env(**isa_env), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_checkpoint(work / "last.ckpt")["state_dict"]


def _equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> int:
    assert a.keys() == b.keys()
    return sum(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow  # four fits in fresh interpreters (~30 s of CPU)
@needs_avx512
def test_held_kernels_give_the_same_weights_whatever_the_cpu_offers(tmp_path):
    held_offered = _fit_weights(tmp_path / "held_offered", [], OFFERED)
    held_avx2 = _fit_weights(tmp_path / "held_avx2", [], AVX2)
    assert _equal(held_offered, held_avx2) == len(held_offered)  # every tensor, bit for bit
    # without the hold the same two runs part: the widest kernels sum in another order
    native_offered = _fit_weights(tmp_path / "native_offered", ["--kernels", "native"], OFFERED)
    native_avx2 = _fit_weights(tmp_path / "native_avx2", ["--kernels", "native"], AVX2)
    assert _equal(native_offered, native_avx2) < len(native_offered)
    # and held is exactly what AVX2 kernels give
    assert _equal(native_avx2, held_avx2) == len(held_avx2)


def test_the_hold_reaches_a_subprocess_and_its_record(tmp_path):
    """``pdx`` sets the hold before torch is imported; a subprocess (a sweep's cell) inherits it through
    PDX_KERNELS; the record says what is in force."""
    probe = (
        "import json; from pdx_lightning.runtime.kernels import apply_kernels; apply_kernels(None); import torch; "
        "from pdx_lightning.runtime.environment import environment; print(json.dumps(environment()))"
    )
    import json

    def record(**env: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", probe], env=_clean_env(**env), capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout)

    held = record(**OFFERED)
    if kernels.can_hold():
        assert held["kernels"] == "avx2"
        assert held["cpu_capability"] == "AVX2"
        assert held["onednn_max_cpu_isa"] == "AVX2" and held["mkl_cbwr"] == "AVX2"
    else:
        assert held["kernels"] == "native"
    native = record(PDX_KERNELS="native")
    assert native["kernels"] == "native" and native["onednn_max_cpu_isa"] is None
    if kernels.cpu_offers() == "avx512":
        assert native["cpu_capability"] == "AVX512"
    for rec in (held, native):
        assert rec["threads"] == 1
        assert rec["cpu"] == kernels.cpu_model() and rec["cpu_vendor"] == kernels.cpu_vendor()
        assert {"torch", "lightning", "numpy", "pdx_commit"} <= rec.keys()


def test_apply_kernels_sets_the_hold_or_leaves_the_environment(monkeypatch):
    for k in ISA_VARS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    assert kernels.apply_kernels("native") == "native"
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx512" and os.environ[kernels.ENV] == "native"
    assert "ONEDNN_MAX_CPU_ISA" not in os.environ
    # PDX_KERNELS (set by a parent pdx) is the default of a child's pdx
    assert kernels.apply_kernels(None) == "native"
    monkeypatch.delenv(kernels.ENV)
    expected = "avx2" if kernels.can_hold() else "native"
    assert kernels.apply_kernels(None) == expected
    if expected == "avx2":
        assert {k: os.environ[k] for k in kernels.HOLD} == kernels.HOLD  # the hold wins over a value set before
    assert os.environ[kernels.ENV] == expected
    assert environment()["kernels"] == expected


def test_a_bad_kernels_value_is_a_one_line_error(capsys, monkeypatch):
    monkeypatch.delenv(kernels.ENV, raising=False)
    with pytest.raises(ValueError, match=r"--kernels must be one of avx2, native, got 'avx512'"):
        kernels.kernels_setting("avx512")
    assert pdx_main(["--kernels", "fast", "config", "list"]) == 2
    err = capsys.readouterr().err
    assert err == "pdx: error: --kernels must be one of avx2, native, got 'fast'\n"
    monkeypatch.setenv(kernels.ENV, "sse")
    assert pdx_main(["config", "list"]) == 2
    assert "got 'sse'" in capsys.readouterr().err
