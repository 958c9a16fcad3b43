"""The sweep's optional stages, once every RL cell is done: arena and analyses over the chosen models.

``pdx arena`` (argmax: base + selected cells + control → ``arena.json``; sampled, each model through
its self-play distribution → ``arena_sampled.json``), ``pdx eval coverage|diagnostics|recovery``
(``<name>.json``) and ``pdx eval humans`` (``humans.json``, when ``analyses.humans`` is set), each a
``pdx`` subprocess, skipped when its JSON exists or its tool is not installed.
A stage added to a finished sweep's config runs when the sweep is rerun (finished cells are skipped).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from pdx_lightning.experiments.report.runs import STAGE_FILES
from pdx_lightning.experiments.sweep import train
from pdx_lightning.experiments.sweep.config import SweepConfig
from pdx_lightning.experiments.sweep.train import SweepError

__all__ = ["STAGE_FILES", "run_stage", "run_stages"]


def run_stage(out: Path, name: str, args: list[str]) -> None:
    """``pdx <args> --json <out>/<name>.json`` unless that file exists; its output goes to ``<name>.log``."""
    if (out / f"{name}.json").is_file():
        print(f"[sweep] {name}: done, skipped", flush=True)
        return
    print(f"[sweep] {name} ...", flush=True)
    rc = train.launch(
        [sys.executable, "-m", "pdx_lightning.cli", *args, "--json", str(out / f"{name}.json")], out / f"{name}.log"
    )
    if rc != 0:
        raise SweepError(f"stage {name} failed (exit {rc}); see {out / f'{name}.log'}")


def run_stages(cfg: SweepConfig, out: Path, doc: dict) -> None:
    """Arena (argmax, then sampled) and analyses over the base, the selected cells and the control."""
    by_name = {c["name"]: c for c in doc["cells"]}
    chosen = [by_name[s["cell"]] for s in doc["selected"]]
    if cfg.arena:
        a = cfg.arena
        models = [c for c in doc["cells"] if c["kind"] == "rl"] if a.models == "all" else chosen
        players = [("base", cfg.base)] + [(c["name"], c["checkpoint"]) for c in models]
        players += [("control", by_name["control"]["checkpoint"])] if doc["control"] else []
        players += [(label, anchor_spec(spec, cfg.base)) for label, spec in a.anchors.items()]
        flags = [f for lab, m in players for f in ("--model", m, "--label", lab)]
        # no --quiet: into a log file the progress bar writes one line per 10 s (runtime.progress)
        common = [*(["--openings", a.openings] if a.openings else []), *a.args]
        run_stage(
            out,
            "arena",
            [
                "arena",
                *flags,
                "--games",
                str(a.games),
                "--base-games",
                str(a.base_games),
                "--pgn",
                str(out / "arena.pgn"),
                *common,
            ],
        )
        if a.sampled_games:
            sampled = [("base raw", cfg.base, "1"), ("base mu", cfg.base, "adaptive")]
            sampled += [
                (c["name"], c["checkpoint"], "adaptive" if c["temperature"] == "adaptive" else "1") for c in chosen
            ]
            flags = [f for lab, m, _ in sampled for f in ("--model", m, "--label", lab)]
            temps = [t for *_, t in sampled]
            run_stage(
                out,
                "arena_sampled",
                ["arena", *flags, "--sample", "--temperature", *temps, "--games", str(a.sampled_games), *common],
            )
    for name in cfg.analyses.run if cfg.analyses else []:
        if importlib.util.find_spec(f"pdx_lightning.evaluation.{name}") is None:
            print(f"[sweep] {name}: `pdx eval {name}` is not installed, skipped (report: not measured)")
            continue
        assert cfg.analyses is not None  # the loop runs over cfg.analyses.run only
        extra = cfg.analyses.args.get(name, [])
        run_stage(out, name, ["eval", name, *_analysis_flags(cfg, name, chosen), *extra])
    if cfg.analyses and cfg.analyses.humans:
        # move matching on human games: the base first (the pairings' baseline), each β* cell, the control,
        # labelled as the report's rows know them
        if "--pgn" not in cfg.analyses.humans:
            raise SweepError("analyses.humans gives no --pgn FILE (the human games)")
        models = [("base", cfg.base)] + [(c["name"], c["checkpoint"]) for c in chosen]
        models += [("control", by_name["control"]["checkpoint"])] if doc["control"] else []
        run_stage(
            out,
            "humans",
            ["eval", "humans", *[f for lab, m in models for f in ("--model", m, "--label", lab)], *cfg.analyses.humans],
        )


def anchor_spec(spec: str, base: str) -> str:
    """An arena anchor's player spec with ``{base_file}`` replaced by the base's resolved file."""
    if "{base_file}" not in spec:
        return spec
    from pdx_lightning.nets import resolve_model_path  # noqa: PLC0415

    if (path := resolve_model_path(base)) is None:
        raise SweepError(f"arena anchor {spec!r} names {{base_file}}, but the base {base!r} has no file")
    return spec.replace("{base_file}", str(path))


def anchor_problems(cfg: SweepConfig) -> list[str]:
    """Arena anchors that would fail after hours of training: a ``uci:`` command not found, a
    ``{base_file}`` without a file."""
    import shlex  # noqa: PLC0415
    import shutil  # noqa: PLC0415

    problems = []
    for label, given in (cfg.arena.anchors if cfg.arena else {}).items():
        try:
            spec = anchor_spec(given, cfg.base)
        except (SweepError, ValueError) as e:  # ModelLoadError is a ValueError
            problems.append(f"arena anchor {label!r}: {e}")
            continue
        if spec.startswith("uci"):
            words = shlex.split(spec.split(":", 1)[1]) if ":" in spec else []
            if not words or shutil.which(words[0]) is None:
                problems.append(f"arena anchor {label!r}: command {words[:1]} not found")
    return problems


def _analysis_flags(cfg: SweepConfig, name: str, chosen: list[dict]) -> list[str]:
    if name == "recovery":  # the fine-tuned models against the base, on the tactics suite
        if not cfg.eval.tactics:
            raise SweepError("analyses.run lists recovery, but eval.tactics (its suite) is not set")
        t = cfg.eval.tactics
        return [
            "--base",
            cfg.base,
            *[f for c in chosen for f in ("--model", c["checkpoint"])],
            *[f for p in t.path for f in ("--suite", p)],
            "--seed",
            str(t.seed),
            *[
                f
                for k, v in (("--sample", t.sample), ("--rating-min", t.rating_min), ("--rating-max", t.rating_max))
                if v is not None
                for f in (k, str(v))
            ],
            *(["--themes", *t.themes] if t.themes else []),
        ]
    # coverage, diagnostics: the base raw and through its tempered μ, each cell as it self-played
    flags = ["--model", cfg.base, "--play", "raw", "--model", cfg.base, "--play", "adaptive"]
    return flags + [f for c in chosen for f in ("--model", c["checkpoint"], "--play", "auto")]
