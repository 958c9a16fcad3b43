"""The one Markdown table builder: the eval tools' tables, the arena's ladder (``elo.ladder_markdown``) and
``pdx report``'s tables (:mod:`pdx_lightning.experiments.report`) all go through :func:`markdown_table`."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence


def markdown_table(header: Sequence[str], rows: Iterable[Sequence], right: Collection[int] = ()) -> str:
    """A Markdown table (no trailing newline): the ``header`` line, the separator line, one line per row
    (cells through ``str``). Columns whose index is in ``right`` are right-aligned (``---:``), the others
    left as Markdown's default (``---``). An empty header cell (a matrix's corner) is written ``| |``."""
    head = "|" + "|".join(f" {h} " if h != "" else " " for h in header) + "|"
    rule = "|" + "".join("---:|" if j in right else "---|" for j in range(len(header)))
    return "\n".join([head, rule, *("| " + " | ".join(str(c) for c in r) + " |" for r in rows)])
