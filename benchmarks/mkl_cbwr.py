"""The speed cost of MKL's COMPATIBLE reproducibility branch (``MKL_CBWR=COMPATIBLE``) under pdx's kernel hold.

The hold (``runtime/kernels.py``) sets ``MKL_CBWR=AVX2``: Intel CPUs run MKL's AVX2 branch, AMD CPUs run
MKL's own choice (``CNR:AUTO`` in MKL's verbose output). ``COMPATIBLE`` (SSE2, meant for every
Intel-compatible CPU) is the one branch both vendors could share; this times what it would cost. Each
network's forward and backward pass on 128 positions (random planes, one thread) runs in a fresh
interpreter per setting and repeat (MKL fixes its branch at its first call), the two settings
interleaved; each run reports the fastest of ``--iters`` passes after 3 warm-ups, in the process's CPU
time (one thread: the work done, not the time spent waiting for a core, so a shared machine's other jobs
disturb it little; the minimum is what the kernels cost). The ratio is COMPATIBLE / held: above 1,
COMPATIBLE costs time. The last column counts the MKL calls of one pass (``MKL_VERBOSE``): Maia-1900 is
convolutional (oneDNN, which ``MKL_CBWR`` does not touch; MKL only in its squeeze-excitation and head
layers), the chessformers are ``nn.Linear`` throughout.

    .venv/bin/python benchmarks/mkl_cbwr.py [--repeats 5] [--iters 15] [--nets base:maia-1900 random:tiny]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("AVX2", "COMPATIBLE")  # the hold's MKL_CBWR, and the branch measured against it
NETS = ("base:maia-1900", "base:small", "random:tiny")

PASS = """
import os, time
from pdx_lightning.runtime import kernels
kernels.HOLD["MKL_CBWR"] = {branch!r}  # the hold, with this MKL branch (pdx has no flag for it)
kernels.apply_kernels("avx2")
import torch
torch.set_num_threads(1)
from pdx_lightning import load_model
net = load_model({net!r})
x = (torch.rand(128, 112, 8, 8, generator=torch.Generator().manual_seed(0)) < 0.1).float()
def once():
    out = net(x)
    (out.policy.square().mean() + out.wdl.square().mean()).backward()
if os.environ.get("MKL_VERBOSE"):  # one pass: MKL prints a line per call
    once()
    raise SystemExit(0)
for _ in range(3):
    once()
times = []
for _ in range({iters}):
    t = time.process_time()
    once()
    times.append(time.process_time() - t)
print(min(times))
"""


def _python(net: str, branch: str, iters: int, verbose: bool = False) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PDX_KERNELS", "MKL_VERBOSE")}
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **({"MKL_VERBOSE": "1"} if verbose else {})})
    proc = subprocess.run(
        [sys.executable, "-c", PASS.format(branch=branch, net=net, iters=iters)],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"mkl_cbwr.py: {net} under MKL_CBWR={branch} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def seconds(net: str, branch: str, iters: int) -> float:
    """The fastest forward+backward pass of ``net`` on 128 positions (CPU seconds), held, with ``MKL_CBWR=branch``."""
    return float(_python(net, branch, iters).split()[-1])


def mkl_calls(net: str, branch: str) -> tuple[int, str]:
    """The MKL calls of one pass and the reproducibility mode MKL reports for them (``CNR:...``)."""
    out = _python(net, branch, 1, verbose=True)
    lines = [ln for ln in out.splitlines() if ln.startswith("MKL_VERBOSE") and "CNR:" in ln]
    modes = sorted({w for ln in lines for w in ln.split() if w.startswith("CNR:")})
    return len(lines), ",".join(modes) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="fresh interpreters per network and setting (default 5)")
    parser.add_argument("--iters", type=int, default=15, help="timed passes per interpreter (default 15)")
    parser.add_argument("--nets", nargs="+", default=list(NETS), help=f"networks (default {' '.join(NETS)})")
    parser.add_argument("--md", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.iters < 1:
        parser.error("--repeats and --iters must be at least 1")
    from pdx_lightning.runtime.kernels import cpu_model, cpu_offers, cpu_vendor  # noqa: PLC0415

    lines = [
        f"Forward+backward on 128 positions, 1 thread, held (MKL_CBWR=AVX2) against held with MKL_CBWR=COMPATIBLE; "
        f"CPU time of the fastest of {args.iters} passes per run, {args.repeats} runs per setting, interleaved; "
        f"CPU {cpu_model()} ({cpu_vendor()}, offers {cpu_offers()}), load {os.getloadavg()[0]:.1f}",
        "",
        "| network | held, CPU ms (runs) | COMPATIBLE, CPU ms (runs) | COMPATIBLE / held (fastest) | per pair (median) "
        "| MKL calls per pass, mode held / COMPATIBLE |",
        "|---|---|---|---|---|---|",
    ]
    for net in args.nets:
        runs: dict[str, list[float]] = {s: [] for s in SETTINGS}
        for _ in range(args.repeats):
            for s in SETTINGS:
                runs[s].append(seconds(net, s, args.iters))
        pairs = [c / h for h, c in zip(runs["AVX2"], runs["COMPATIBLE"])]
        (n_held, mode_held), (n_compat, mode_compat) = mkl_calls(net, "AVX2"), mkl_calls(net, "COMPATIBLE")
        row = (
            f"| {net} | {', '.join(f'{1e3 * t:.1f}' for t in runs['AVX2'])} "
            f"| {', '.join(f'{1e3 * t:.1f}' for t in runs['COMPATIBLE'])} "
            f"| {min(runs['COMPATIBLE']) / min(runs['AVX2']):.3f} | {statistics.median(pairs):.3f} "
            f"| {n_held} {mode_held} / {n_compat} {mode_compat} |"
        )
        print(row, flush=True)
        lines.append(row)
    text = "\n".join(lines)
    print(text)
    if args.md:
        args.md.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
