"""The compiled core under AddressSanitizer + UndefinedBehaviorSanitizer and ThreadSanitizer (issue 37): the slow
run builds the core's C files (``chesscore/*.c``) with each and runs the core's tests and the fuzzer against the
builds (``run_sanitizers.sh``); each build first has to catch a planted bug. Skipped where the compiler has no
sanitizer runtimes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("run_sanitizers.sh")


def _runtimes_missing() -> str | None:
    cc = shutil.which("gcc")
    if cc is None:
        return "no gcc"
    for lib in ("libasan.so", "libtsan.so", "libubsan.so"):
        path = subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
        if not Path(path).exists():
            return f"gcc has no {lib}"
    return None


MISSING = _runtimes_missing()


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None, reason=f"sanitizers unavailable: {MISSING}")
def test_the_core_is_clean_under_asan_ubsan_and_tsan():
    run = subprocess.run(
        ["bash", str(SCRIPT), "all", "20000"],
        capture_output=True,
        text=True,
        timeout=3600,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    out = run.stdout
    assert "asan: the planted bug was caught" in out and "tsan: the planted bug was caught" in out
    assert out.count("0 mismatches") == 2 and "run_sanitizers: no finding" in out
