"""The searched-strength figure: each cell's Elo against the base by Lc0 node count, from ``records/``.

Each point is one 1,000-game match of the real Lc0 playing the cell against the released base at the
same node limit (``lc0_n<N>_<cell>.json``, pentanomial Elo ± 95%), read through ``searched.py``'s
``verdict_rows``, as the report's verdict table is; a match without a finished record is not drawn
(an unfinished one is drawn hollow, labelled interim, with its games so far).

    .venv/bin/python -m reports.beyond_paper.search_figure # writes search_elo_by_nodes.png here
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).resolve().parent
RECORDS = HERE / "records"
NAME = "search_elo_by_nodes.png"
COLORS = {"forward_kl": "tab:green", "reverse_kl": "tab:blue", "none": "tab:gray", "entropy": "tab:orange"}
NODE_COUNTS = (1, 16, 64, 256)


def points(records: Path = RECORDS) -> dict[str, list[tuple[int, float, float, bool]]]:
    """Per cell label: (nodes, Elo, ± 95%, interim) for every node count with a match record."""
    from reports.beyond_paper import searched as mod

    _header, _rows, data = mod.verdict_rows(records, nodes=NODE_COUNTS[1:])
    out: dict[str, list[tuple[int, float, float, bool]]] = {}
    for e in data:
        pts = [(1, *e["single"], False)]
        for n in NODE_COUNTS[1:]:
            if n in e["searched"]:
                pts.append((n, e["searched"][n][0], e["searched"][n][1], False))
            elif n in e.get("interim", {}):
                pts.append((n, e["interim"][n][0], e["interim"][n][1], True))
        out[e["label"]] = pts
    return out


def figure(out: Path = HERE, records: Path = RECORDS) -> Path:
    from reports.beyond_paper import searched as mod

    data = points(records)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for k, (label, pts) in enumerate(data.items()):
        term = mod.CELLS[label][0]
        shift = 1 + (k - (len(data) - 1) / 2) * 0.06  # side by side on the log axis
        xs = [n * shift for n, *_ in pts]
        ax.plot(xs, [e for _, e, _, _ in pts], color=COLORS.get(term, "k"), lw=1, alpha=0.6)
        for x, (_n, elo, half, interim) in zip(xs, pts):
            ax.errorbar(
                [x],
                [elo],
                yerr=[half],
                fmt="o",
                ms=5,
                capsize=3,
                color=COLORS.get(term, "k"),
                mfc="white" if interim else COLORS.get(term, "k"),
            )
        ax.plot([], [], "o-", color=COLORS.get(term, "k"), label=mod.cell_name(label))
    ax.axhline(0, color="k", ls="--", lw=1, label="the base (Maia-1900) at the same nodes")
    shown = sorted({n for pts in data.values() for n, *_ in pts})
    ax.set_xscale("log")
    ax.set_xticks(shown, [str(n) for n in shown])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set(
        xlabel="Lc0 nodes per move (both sides)",
        ylabel="Elo vs the base (± 95%)",
        title="Fine-tuned cells against their base inside the real Lc0",
    )
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    path = out / NAME
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


if __name__ == "__main__":
    print(f"wrote {figure()}")
    sys.exit(0)
