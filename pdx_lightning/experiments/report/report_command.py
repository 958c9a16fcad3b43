"""``pdx report --runs DIR --out DIR``: ``report.md`` and the PNG figures of a sweep's output directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from pdx_lightning.experiments.report import figures, real, run_tables, seeds
from pdx_lightning.experiments.report.recovery_tables import recovery
from pdx_lightning.experiments.report.runs import NM, Runs, load_runs
from pdx_lightning.experiments.report.tables import (
    table1,
    table3,
    table4,
    table5,
    table6,
    table_arena,
    table_cells,
    table_coverage,
    table_humans,
    table_paired,
    table_recovery,
)
from pdx_lightning.files.atomicfile import atomic_write, atomic_write_text
from pdx_lightning.runtime.environment import environment
from pdx_lightning.runtime.jsonio import dumps


def render(runs: Runs, out: Path) -> str:
    """The whole report as Markdown; the figures are written into ``out``."""
    cfg = runs.sweep["config"]
    done = sum(c["status"] == "done" for c in runs.sweep["cells"])
    suites = {k: f"{s['n']} puzzles" for k, s in (runs.base or {}).get("suites", {}).items()}
    md = [
        f"# pdx report: {runs.root}",
        "",
        f"Base `{cfg['base']}`; every cell {cfg['steps']} steps × {cfg['games']} games, "
        + (
            f"seed {cfg['seed']} "
            if len(cfg.get("seeds") or [cfg["seed"]]) < 2
            else f"seeds {cfg['seeds']} (β* on seed {cfg['seed']}) "
        )
        + f"(matched compute); terms {cfg['terms']}, temperatures {cfg['temperatures']}, "
        f"β grid {cfg['betas']}; {done}/{len(runs.sweep['cells'])} cells finished. Suites: "
        + (", ".join(f"{k} {v}" for k, v in suites.items()) or NM)
        + ". All numbers are read from the JSON files in the runs directory; *not measured* marks inputs "
        "that are absent. Accuracies are argmax, multi-solution scored, EMA weights, ± half the 95% Wilson "
        "interval; rows are each arm's β* (Table 6).",
        "",
    ]
    md += [
        "## Table 1: accuracy and searchless strength at β*",
        "",
        table1(runs),
        "",
        "Elo: argmax round robin (`arena.json`), base anchored at 0, ± half the 95% interval; "
        "W–D–L and LOS: direct record against the base."
        + ("" if runs.files["arena"] else f" Elo, W–D–L, LOS: *{NM}* (no arena.json)."),
        "",
    ]
    md += real.sections(runs, out)  # only when the real Lichess suites were scored
    md += [
        "## Arena: every player",
        "",
        table_arena(runs),
        "",
        "Every player of the argmax arena (every cell when the sweep's `arena.models` is `all`, the "
        "control, the anchors of `arena.anchors`); Elo on the ladder, base at 0; W–D–L, score and LOS "
        "from its games against the base.",
        "",
        "## Table 3: mate-in-N accuracy (%)",
        "",
        table3(runs),
        "",
        "## Table 4: solution probability p*, geometric mean (arithmetic)",
        "",
        table4(runs),
        "",
        "## Paired with the base: p* ratio and puzzles gained/lost",
        "",
        table_paired(runs),
        "",
        "Per model and suite, on the same puzzles as the base: the geometric-mean p* ratio to the base "
        "(exp of the mean per-puzzle log ratio) with its 95% interval (Figure 1's points, with intervals), "
        "then the argmax puzzles the model solves and the base does not (+) and the reverse (−), with "
        "the exact McNemar p of that difference.",
        "",
    ]
    md += seeds.sections(runs)  # only when an arm has cells of several seeds
    md += run_tables.sections(runs)  # the same, as rliable's mean / IQM / probability of improvement
    md += [
        "## Table 5: sampled play and policy diagnostics",
        "",
        table5(runs),
        "",
        "Elo: sampled round robin (`arena_sampled.json`); H, KLs, cov: `diagnostics.json`.",
        "",
        "## Table 6: β selection on the selection suite",
        "",
        table6(runs),
        "",
    ]
    if runs.files["humans"]:  # only when measured: reports made before this stage existed stay as they were
        md += [
            "## Human move-matching",
            "",
            table_humans(runs),
            "",
            "Top-1: the model's argmax is the human's move; top-5: the human's move is among its 5 most "
            "probable; NLL: −log π(human move) (`humans.json`, `pdx eval humans`). Does the prior keep "
            "the fine-tuned policy human where the other arms drift?",
            "",
        ]
    for title, (png, caption) in figures.draw_all(runs, out).items():
        md += [f"## {title}", "", f"![{title}]({png})" if png else f"*{NM}*", "", caption, ""]
    entries, source = recovery(runs)
    md += [
        "## Figure 7 (numbers): trajectory coverage",
        "",
        table_coverage(runs),
        "",
        "Lines of N plies drawn without replacement from the play distribution (raw π, or the tempered μ "
        "the cell self-played with); Ω_K: the mass of the first K distinct lines, mean over seeds "
        "(`coverage.json`); – : every seed stopped at the target before K draws.",
        "",
        "## Figure 8 (numbers): recovery of base-wrong positions",
        "",
        (table_recovery(entries) + f"\n\nSource: {source}.") if entries else f"*{NM}*",
        "",
        "## All cells",
        "",
        table_cells(runs),
        "",
        "H and the KLs are the online policy's means over the self-play positions of the last training "
        "step (TensorBoard `policy/entropy`, `kl/*`), not Table 5's played-policy diagnostics.",
        "",
    ]
    return "\n".join(md)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", required=True, help="a `pdx sweep` output directory (sweep.json, cells/, ...)")
    parser.add_argument("--out", required=True, help="directory for report.md and the PNG figures")
    parser.add_argument(
        "--archive",
        metavar="FILE.tar.xz",
        help="also pack every JSON file of --runs (not checkpoints or logs) into this archive, "
        "from which `pdx report` rebuilds the same report (`tar xJf FILE -C DIR`), with "
        "archive_environment.json: the versions it was made with (python, torch, lightning, "
        "numpy, chess, pdx_lightning)",
    )


def run(args: argparse.Namespace) -> int:
    runs = load_runs(args.runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "report.md", render(runs, out))
    print(f"wrote {out / 'report.md'}")
    if getattr(args, "archive", None):
        n = write_archive(Path(args.runs), Path(args.archive))
        print(f"wrote {args.archive} ({n} JSON files)")
    return 0


ENVIRONMENT_FILE = "archive_environment.json"  # in every archive: the versions it was made with


def write_archive(root: Path, path: Path) -> int:
    """Every ``*.json`` under ``root`` outside ``checkpoints/`` and logger directories, as a reproducible
    ``.tar.xz`` (sorted names, no owners or times), paths relative to ``root``; plus
    ``archive_environment.json``, the versions the archive was made with (python, torch, lightning,
    numpy, chess, pdx_lightning and its commit: ``runtime.environment``). Returns the JSON files packed."""
    import io  # noqa: PLC0415
    import tarfile  # noqa: PLC0415

    skip = {"checkpoints", "tb", "csv", "lightning_logs"}
    files = sorted(p for p in root.rglob("*.json") if not skip & set(p.relative_to(root).parts[:-1]))

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = info.mtime = 0
        info.uname = info.gname = ""
        return info

    blob = (dumps({"schema": "pdx_environment/1", **environment()}, indent=1) + "\n").encode()
    members = sorted(
        [
            (f"./{f.relative_to(root).as_posix()}", f)
            for f in files
            if f.relative_to(root).as_posix() != ENVIRONMENT_FILE
        ]
        + [(f"./{ENVIRONMENT_FILE}", blob)]
    )  # this archive's, over one packed from runs/
    with atomic_write(path) as f, tarfile.open(fileobj=f, mode="w:xz") as tar:
        for name, source in members:
            if isinstance(source, bytes):
                info = clean(tarfile.TarInfo(name))
                info.size = len(source)
                tar.addfile(info, io.BytesIO(source))
            else:
                tar.add(source, arcname=name, filter=clean)
    return len(members)
