"""Searched self-play's throughput on this CPU: positions trained per second and where the time goes.

    .venv/bin/python benchmarks/searched.py [--base base:maia-1900] [--games 64] [--nodes 16] [--steps 20]

Builds a :class:`~pdx_lightning.rl.searched_module.SearchedModule` (the settings of
``conf/fit/searched.yaml``: 64 games, 16 nodes, batches of 256, each position presented 4 times) and runs
its steps by hand, one thread, timing three parts of every step:

* **network (search)**: the forward passes of the search's simulation waves (``BatchedSearch._network``);
* **search**: the rest of playing a ply: tree, move generation, encoding, targets, the games' glue;
* **training**: drawing the batch, the online network's forward and backward, AdamW, the EMA update.

It prints positions searched per second, positions trained per second (presentations, batch × steps) and
the three shares, then a projection for one GPU: the searched network time divided by a factor read from
``--gpu-speedup`` (the network's measured CPU/GPU ratio; see benchmarks/gpu.py and benchmarks/network.py
for how it is measured there), the search's own time kept as measured (it runs on the CPU either way).
The first steps fill the replay buffer (``min_buffer``) and are timed apart, as warm-up.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from pdx_lightning.rl.searched_module import SearchedModule
from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings
from pdx_lightning.runtime.optim import ema_update


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="base:maia-1900")
    ap.add_argument("--games", type=int, default=64)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--gpu-speedup", type=float, default=50.0, help="network CPU time / GPU time (projection only)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    s = SearchedSelfPlaySettings(n_games=a.games, nodes=a.nodes, batch_size=256, min_buffer=512, reuse=4)
    m = SearchedModule(base=a.base, algorithm=s, seed=0)
    opt = torch.optim.AdamW(m.online.parameters(), lr=1e-5)
    it = iter(m.dataset)
    net_time = [0.0]
    search = m.dataset._searcher()
    inner = search._network

    def timed_network(planes, legal):
        t = time.perf_counter()
        out = inner(planes, legal)
        net_time[0] += time.perf_counter() - t
        return out

    search._network = timed_network  # type: ignore[method-assign]
    t0 = time.perf_counter()
    while len(m.buffer) < s.min_buffer:  # warm-up: fill the buffer
        m.buffer.add(next(it).finished)
    warm_s = time.perf_counter() - t0
    net_time[0] = 0.0
    play = train = searched = 0.0
    positions = 0
    for _ in range(a.steps):
        t = time.perf_counter()
        plies = 0
        while plies < s.plies_per_step or len(m.buffer) < s.batch_size:
            ply = next(it)
            m.buffer.add(ply.finished)
            positions += ply.searched
            plies += 1
        play += time.perf_counter() - t
        t = time.perf_counter()
        batch = m.buffer.batch(m.buffer.draw(s.batch_size))
        opt.zero_grad()
        out = m.online(batch.planes)
        from pdx_lightning.rl.searched_step import searched_loss  # noqa: PLC0415

        loss, _ = searched_loss(out.policy, out.wdl, batch, s.c_v, s.beta)
        loss.backward()
        opt.step()
        ema_update(m.ema, m.online, s.ema_decay)
        train += time.perf_counter() - t
    searched = net_time[0]
    total = play + train
    trained = a.steps * s.batch_size
    gpu_net = searched / a.gpu_speedup
    projected = (play - searched) + gpu_net + train / a.gpu_speedup
    doc = {
        "base": a.base,
        "games": a.games,
        "nodes": a.nodes,
        "steps": a.steps,
        "warmup_s": round(warm_s, 2),
        "positions_searched_per_s": round(positions / play, 2),
        "positions_trained_per_s": round(trained / total, 2),
        "share_network_in_search": round(searched / total, 3),
        "share_search_own": round((play - searched) / total, 3),
        "share_training": round(train / total, 3),
        "gpu_speedup_assumed": a.gpu_speedup,
        "projected_positions_trained_per_s_one_gpu": round(trained / projected, 1),
        "torch_threads": torch.get_num_threads(),
    }
    for k, v in doc.items():
        print(f"{k:45s} {v}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
