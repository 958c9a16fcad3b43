"""The step's bit-level fingerprint (tests/fingerprint_steps.py) is the recorded one.

``tests/fixtures/fingerprint/steps.json`` holds three real ``pdx fit`` steps of each arm (metrics, games,
weights, AdamW state, RNG) with the CPU kernels held to AVX2 (the default, ``runtime/kernels.py``);
``steps_native_avx512.json`` the same with ``--kernels native`` on an AVX-512 CPU (the record before the
hold) and ``before_d377ef5.json`` that made on the tree before Algorithm 1 was gathered into
``rl/pdx_step.py`` (identical). A change that moves any of them fails here; a deliberate one records a
new fingerprint (``.venv/bin/python tests/fingerprint_steps.py tests/fixtures/fingerprint/steps.json``) and
says why in CHANGELOG.md. Bit-identity holds for one torch build, kernel setting and CPU vendor (held:
any x86-64 CPU with AVX2 of one vendor, since MKL runs another code path on Intel than on AMD CPUs;
native: one kind of CPU), so each held fingerprint exists once per vendor (``steps.json`` and
``intervals.json`` from an AMD EPYC, ``steps_intel.json`` and ``intervals_intel.json`` from an Intel
Xeon: the same games, other weights), and another torch version, an architecture where the hold does
not apply, a vendor with no record or ``PDX_KERNELS=native`` on a CPU of another kind skips with the reason.
``intervals*.json`` (``tests/fingerprint_intervals.py``) holds 30 steps of the forward-KL arm, every step's
metrics and the weights at steps 10, 20, 30, made under the hold: a change that moves a run only later.
``*_mkl_compatible_amd.json`` are measurements, not records to reproduce: the AMD EPYC under the hold with
MKL's COMPATIBLE branch (``--mkl-cbwr COMPATIBLE``), which matches neither vendor's record.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest
import torch

from pdx_lightning.runtime.kernels import cpu_offers, cpu_vendor

HERE = Path(__file__).resolve().parent
RECORD = HERE / "fixtures" / "fingerprint" / "steps.json"
NATIVE = HERE / "fixtures" / "fingerprint" / "steps_native_avx512.json"
BEFORE = HERE / "fixtures" / "fingerprint" / "before_d377ef5.json"

pytestmark = pytest.mark.slow


def held_record(prefix: str) -> Path:
    """The held fingerprint ``prefix*.json`` made on this CPU's vendor (skips where none was recorded)."""
    vendor = cpu_vendor()
    for path in sorted(RECORD.parent.glob(f"{prefix}*.json")):
        record = json.loads(path.read_text())
        # a measurement under another MKL branch (``mkl_cbwr``, fingerprint_steps.py --mkl-cbwr) is no hold's record
        if record["kernels"] == "avx2" and record.get("cpu_vendor") == vendor and "mkl_cbwr" not in record:
            return path
    pytest.skip(f"no held fingerprint recorded on a {vendor} CPU: record one with tests/fingerprint_{prefix}.py")


def test_a_held_fingerprint_per_vendor_same_games_other_weights():
    """The Intel and the AMD record under the hold: the same moves and generators, other weights (MKL)."""
    amd, intel = (json.loads((RECORD.parent / f).read_text()) for f in ("steps.json", "steps_intel.json"))
    assert (amd["cpu_vendor"], intel["cpu_vendor"]) == ("AuthenticAMD", "GenuineIntel")
    assert amd["kernels"] == intel["kernels"] == "avx2" and set(amd["arms"]) == set(intel["arms"])
    for arm, fp in amd["arms"].items():
        assert (fp["games"], fp["rng"]) == (intel["arms"][arm]["games"], intel["arms"][arm]["rng"])
        assert fp["weights_all"] != intel["arms"][arm]["weights_all"]


def test_mkl_compatible_on_amd_matches_neither_vendors_record():
    """MKL's COMPATIBLE branch measured on the AMD EPYC (``fingerprint_steps.py --mkl-cbwr COMPATIBLE``,
    docs/reliability.md): the same games and generators, but the weights of neither held record, so the
    hold keeps ``MKL_CBWR=AVX2``; the 30-step record parts from both at step 0. Kept to compare an Intel
    CPU's run under the same branch with."""
    fixtures = RECORD.parent
    compat, amd, intel = (
        json.loads((fixtures / f).read_text())
        for f in ("steps_mkl_compatible_amd.json", "steps.json", "steps_intel.json")
    )
    assert (compat["mkl_cbwr"], compat["cpu_vendor"], compat["kernels"]) == ("COMPATIBLE", "AuthenticAMD", "avx2")
    for arm, fp in compat["arms"].items():
        for held in (amd, intel):
            assert (fp["games"], fp["rng"]) == (held["arms"][arm]["games"], held["arms"][arm]["rng"])
            assert fp["weights_all"] != held["arms"][arm]["weights_all"]
    intervals = [
        json.loads((fixtures / f).read_text())["metrics"][0]["kl/forward_to_base"]
        for f in ("intervals_mkl_compatible_amd.json", "intervals.json", "intervals_intel.json")
    ]
    assert len(set(intervals)) == 3  # step 0, online = base: three roundings of a zero KL


def test_the_recorded_fingerprints_agree():
    """The tree before the refactor and after it: the same steps, bit for bit."""
    before, after = json.loads(BEFORE.read_text()), json.loads(NATIVE.read_text())
    assert before["arms"] == after["arms"]
    # the hold moved the numbers, not the games' openings or the generators: same moves over three steps
    held = json.loads(RECORD.read_text())
    assert held["kernels"] == "avx2" and after["kernels"] == "native"
    for arm, fp in held["arms"].items():
        assert (fp["games"], fp["rng"]) == (after["arms"][arm]["games"], after["arms"][arm]["rng"])
        assert fp["weights_all"] != after["arms"][arm]["weights_all"]
    assert set(after["arms"]) == {
        "none",
        "entropy",
        "forward_kl",
        "reverse_kl",
        "forward_kl-fixed",
        "forward_kl-reference",
    }


def test_three_steps_per_arm_reproduce_the_recorded_fingerprint(tmp_path):
    sys.path.insert(0, str(HERE))
    from fingerprint_steps import main, recorded_kernels

    setting = recorded_kernels()
    record = json.loads((held_record("steps") if setting == "avx2" else NATIVE).read_text())
    if record["torch"] != torch.__version__ or record["machine"] != platform.machine():
        pytest.skip(
            f"fingerprint recorded with torch {record['torch']} on {record['machine']}; "
            f"this is torch {torch.__version__} on {platform.machine()}"
        )
    if setting == "native" and (record["cpu_offers"], record["cpu_vendor"]) != (cpu_offers(), cpu_vendor()):
        pytest.skip(
            f"native kernels: recorded on a {record['cpu_vendor']} CPU offering {record['cpu_offers']}, "
            f"this one {cpu_vendor()} offering {cpu_offers()}"
        )

    out = tmp_path / "steps.json"
    assert main([str(out), "--steps", str(record["steps"])]) == 0
    now = json.loads(out.read_text())
    for arm, expected in record["arms"].items():
        for part, value in expected.items():
            assert now["arms"][arm][part] == value, f"{arm}: {part} changed"


INTERVALS = HERE / "fixtures" / "fingerprint" / "intervals.json"


def test_thirty_steps_reproduce_the_recorded_fingerprint_at_every_interval(tmp_path):
    """A change that moves a run only after its first three steps (a game's end, a restart, the warm-up's
    end) fails here, naming the first step whose logged metrics changed and the first weights that did."""
    sys.path.insert(0, str(HERE))
    from fingerprint_intervals import main
    from fingerprint_steps import recorded_kernels

    record = json.loads((held_record("intervals") if recorded_kernels() == "avx2" else INTERVALS).read_text())
    if (record["torch"], record["machine"], record["kernels"]) != (
        torch.__version__,
        platform.machine(),
        recorded_kernels(),
    ):
        pytest.skip(
            f"recorded with torch {record['torch']} on {record['machine']}, kernels {record['kernels']}; "
            f"this is torch {torch.__version__} on {platform.machine()}, kernels {recorded_kernels()}"
        )
    if record["kernels"] == "native" and (record["cpu_offers"], record["cpu_vendor"]) != (cpu_offers(), cpu_vendor()):
        pytest.skip(
            f"native kernels: recorded on a {record['cpu_vendor']} CPU offering {record['cpu_offers']}, "
            f"this one {cpu_vendor()} offering {cpu_offers()}"
        )
    out = tmp_path / "intervals.json"
    assert main([str(out), "--steps", str(record["steps"]), "--every", str(record["every"])]) == 0
    now = json.loads(out.read_text())
    assert len(now["metrics"]) == len(record["metrics"])
    for old, new in zip(record["metrics"], now["metrics"]):
        assert new == old, f"step {old.get('step')}: logged metrics changed"
    for step, digest in record["weights"].items():
        assert now["weights"][step] == digest, f"weights at step {step} changed"


def test_three_searched_steps_reproduce_the_recorded_fingerprint(tmp_path):
    """The searched trainer's step (``tests/fingerprint_searched.py``): metrics, weights and AdamW state of
    three steps of a tiny searched fit, recorded held on an AMD EPYC when its step became a function."""
    sys.path.insert(0, str(HERE))
    from fingerprint_searched import main
    from fingerprint_steps import recorded_kernels

    if recorded_kernels() != "avx2":
        pytest.skip("the searched fingerprint is recorded with the kernels held to AVX2 only")
    record = json.loads(held_record("searched").read_text())
    if record["torch"] != torch.__version__:
        pytest.skip(f"fingerprint recorded with torch {record['torch']}; this is torch {torch.__version__}")
    out = tmp_path / "searched.json"
    assert main([str(out), "--steps", str(record["steps"])]) == 0
    now = json.loads(out.read_text())["searched"]
    for part, value in record["searched"].items():
        assert now[part] == value, f"searched: {part} changed"
