"""What the benchmarks against the real Lc0 share: where Lc0 and Maia are, the machine's state, statistics.

Not a benchmark itself (``benchmarks/lc0_*.py`` import it). Every table says what else was running:
:func:`machine_note` reads the load average and the busiest other processes, because on a shared 2-core
machine an absolute number means little and a ratio measured in one run, interleaved, means more.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
LC0 = VENV_BIN / "lc0"
MAIA_DIR = ROOT.parent / "shared" / "lc0" / "maia"
REPORTS = ROOT / "reports" / "maia"


class BenchmarkError(RuntimeError):
    """A benchmark that cannot run or whose check failed (says what and where)."""


def maia(rating: int = 1900) -> Path:
    path = MAIA_DIR / f"maia-{rating}.pb.gz"
    if not path.is_file():
        raise BenchmarkError(f"{path} is missing: the Maia files live in ../shared/lc0/maia (developers, CI)")
    return path


def lc0_command(weights: Path, threads: int = 1) -> list[str]:
    """The real Lc0 engine on ``weights``: eigen backend, ``threads`` search threads."""
    if not LC0.is_file():
        raise BenchmarkError(
            f"{LC0} is missing: setup.sh builds the lc0 engine into the venv when ../shared/lc0 exists"
        )
    return [str(LC0), f"--weights={weights}", "--backend=eigen", f"--threads={threads}"]


def pdx_uci_command(model: str, threads: int = 1) -> list[str]:
    """``pdx uci`` as a user starts it (the console script), one torch thread unless told otherwise."""
    return [str(VENV_BIN / "pdx"), "--threads", str(threads), "uci", "--model", model, "--threads", str(threads)]


ABSOLUTE_DIRS = re.compile(r"(?<![\w.~])/(?:[^\s/]+/)+")  # "/a/b/" of "/a/b/pdx", "--x=/a/b/c"


def machine_note() -> str:
    """One line: load averages, cores, and the other processes using the CPU right now (ps)."""
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    try:
        ps = subprocess.run(
            ["ps", "-eo", "pid,ppid,pcpu,args", "--sort=-pcpu", "--no-headers"],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        ps = []
    me = str(os.getpid())
    busy = []
    for line in ps:
        pid, ppid, pcpu, *args = line.split(None, 3)
        try:
            if float(pcpu) < 5.0:
                break
        except ValueError:
            continue
        if me in (pid, ppid):  # this benchmark and the engines it started
            continue
        # the program's name and its first words, an absolute path among them cut to its name (no machine
        # paths in the reports)
        words = " ".join(args).split()[:4]
        name = " ".join(Path(a).name if i == 0 else ABSOLUTE_DIRS.sub("", a) for i, a in enumerate(words))
        busy.append(f"{name[:60]} ({float(pcpu):.0f}%)")
    others = "; ".join(busy[:6]) or "nothing above 5% CPU"
    return f"load average {load} on {os.cpu_count()} cores; also running: {others}"


def median_spread(values: list[float]) -> tuple[float, float, float]:
    """``(median, min, max)``."""
    return statistics.median(values), min(values), max(values)


def fmt_ms(seconds: list[float]) -> str:
    med, lo, hi = median_spread(seconds)
    return f"{med * 1e3:.3f} ({lo * 1e3:.3f}–{hi * 1e3:.3f})"


def verdict(ratio: float, target: float, higher_is_better: bool) -> str:
    ok = ratio >= target if higher_is_better else ratio <= target
    return f"{'met' if ok else 'NOT met'} (target {'≥' if higher_is_better else '≤'} {target:g}x)"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_report(name: str, markdown: str, data: dict) -> Path:
    """``reports/maia/<name>.md`` and ``.json`` (the markdown is also printed by the caller)."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    (REPORTS / f"{name}.md").write_text(f"<!-- written by benchmarks/{name}.py at {stamp} -->\n{markdown}\n")
    (REPORTS / f"{name}.json").write_text(json.dumps({"written": stamp, **data}, indent=1) + "\n")
    return REPORTS / f"{name}.md"
