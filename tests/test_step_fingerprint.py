"""The step's bit-level fingerprint (tests/fingerprint_steps.py) is the recorded one.

``tests/fixtures/fingerprint/steps.json`` holds three real ``pdx fit`` steps of each arm (metrics, games,
weights, AdamW state, RNG); ``before_d377ef5.json`` the same made on the tree before Algorithm 1 was gathered
into ``rl/pdx_step.py`` (identical). A change that moves any of them fails here; a deliberate one records a
new fingerprint (``.venv/bin/python tests/fingerprint_steps.py tests/fixtures/fingerprint/steps.json``) and
says why in CHANGELOG.md. Bit-identity holds for one torch build and CPU kind, so another torch version
or machine architecture skips with the reason.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
RECORD = HERE / "fixtures" / "fingerprint" / "steps.json"
BEFORE = HERE / "fixtures" / "fingerprint" / "before_d377ef5.json"

pytestmark = pytest.mark.slow


def test_the_recorded_fingerprints_agree():
    """The tree before the refactor and after it: the same steps, bit for bit."""
    before, after = json.loads(BEFORE.read_text()), json.loads(RECORD.read_text())
    assert before["arms"] == after["arms"]
    assert set(after["arms"]) == {
        "none",
        "entropy",
        "forward_kl",
        "reverse_kl",
        "forward_kl-fixed",
        "forward_kl-reference",
    }


def test_three_steps_per_arm_reproduce_the_recorded_fingerprint(tmp_path):
    record = json.loads(RECORD.read_text())
    if record["torch"] != torch.__version__ or record["machine"] != platform.machine():
        pytest.skip(
            f"fingerprint recorded with torch {record['torch']} on {record['machine']}; "
            f"this is torch {torch.__version__} on {platform.machine()}"
        )
    sys.path.insert(0, str(HERE))
    from fingerprint_steps import main

    out = tmp_path / "steps.json"
    assert main([str(out), "--steps", str(record["steps"])]) == 0
    now = json.loads(out.read_text())
    for arm, expected in record["arms"].items():
        for part, value in expected.items():
            assert now["arms"][arm][part] == value, f"{arm}: {part} changed"
