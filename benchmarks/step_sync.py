"""What the cross-rank metrics cost per step: 2 CPU ranks (gloo), one thread each.

Measures, on each rank, the median seconds of (a) one step's metric synchronisation: this rank's summary
row into ``rl.step_metrics.StepSummaries``, gathered from both ranks and combined (what ``PDXModule``
adds to every step under DDP), against the same with no process group (one process); and (b) one puzzle
validation of the bundled suites on ``random:tiny``, sharded over the two ranks and all-reduced
(``callbacks.PuzzleValidation``), against one process scoring everything. The step itself on the CPU
takes 0.1-3 s (tiny to Maia, ``benchmarks/selfplay.py``): the ratio of (a) to that is the overhead.

    .venv/bin/python benchmarks/step_sync.py [--repeats 200]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pdx_lightning.callbacks import PuzzleValidation
from pdx_lightning.nets import load_model
from pdx_lightning.rl.step_metrics import StepSummaries, combine_summaries, summary_row

MEANS = {f"m{i}": 0.1 * i for i in range(14)}  # ~ the step's 14 mean metrics


def _sync_seconds(repeats: int) -> float:
    summaries, times = StepSummaries(), []
    for i in range(repeats):
        t0 = time.perf_counter()
        row = summary_row(MEANS, n=64, seconds=1.0, adv_std=0.3, finished=i % 3, length_sum=80, white_win=1,
                          draw=0, black_win=0, games_finished=i)  # fmt: skip
        summaries.update(row)
        combine_summaries(summaries.compute(), list(MEANS))
        summaries.reset()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _validation_seconds(repeats: int) -> float:
    torch.manual_seed(0)
    net, cb = load_model("random:tiny").eval(), PuzzleValidation(sample=100)
    cb.load()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cb.score(net)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _rank(rank: int, port: int, repeats: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        queue.put((rank, _sync_seconds(repeats), _validation_seconds(max(3, repeats // 50))))
    finally:
        dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=200, help="synchronised steps timed per rank (default 200)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    one_sync, one_val = _sync_seconds(args.repeats), _validation_seconds(max(3, args.repeats // 50))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, port, args.repeats, queue)) for r in range(2)]
    for p in procs:
        p.start()
    got = sorted(queue.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of {args.repeats} steps")
    print("| what | one process | 2 gloo ranks (rank 0 / rank 1) |")
    print("|---|---|---|")
    print(
        f"| step metrics: row, gather, combine | {1e3 * one_sync:.3f} ms | "
        f"{1e3 * got[0][1]:.3f} / {1e3 * got[1][1]:.3f} ms |"
    )
    print(
        f"| puzzle validation (bundled suites, 100 + mates, random:tiny) | {one_val:.3f} s | "
        f"{got[0][2]:.3f} / {got[1][2]:.3f} s |"
    )


if __name__ == "__main__":
    main()
