"""The sweep YAML (``conf/sweep/*.yaml``) as typed dataclasses, read with jsonargparse, and the cells it plans.

:func:`load_config` reads the file; jsonargparse checks every key and type against
:class:`SweepConfig` (unknown keys are errors), the dataclasses' ``__post_init__`` check what types
cannot say, and every error becomes one :class:`SweepConfigError` line naming the file and the key.
Shorthand: a suite may be given as its path(s) alone (``selection: data/tactics.csv``), and a
suite's ``path`` as one string.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import re
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pdx_lightning.errors import UserError
from pdx_lightning.evaluation.suite import SuiteSpec
from pdx_lightning.experiments.arms import REGULARIZED, TEMPERATURES, TERMS, UNREGULARIZED
from pdx_lightning.files.resources import resolve_path
from pdx_lightning.files.safeio import read_config_text
from pdx_lightning.runtime.moved_configs import check_config_path

PAPER_BETAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
ANALYSES = ("coverage", "diagnostics", "recovery")
SUITES = ("selection", "tactics", "hard", "mates", "real", "real_hard")
# roles that only add scores (real Lichess puzzles): outside the lock (lock.py), so a sweep whose cells exist
# may gain them
SCORE_ONLY_SUITES = ("real", "real_hard")

Term = Literal[TERMS]  # type: ignore[valid-type]  # the arms' names, one source
Temperature = Literal[TEMPERATURES]  # type: ignore[valid-type]
Analysis = Literal[ANALYSES]  # type: ignore[valid-type]


class SweepConfigError(UserError, ValueError):
    """A sweep YAML that does not fit :class:`SweepConfig` (says which key and why)."""


# ---------------------------------------------------------------- the schema


@dataclass
class EvalConfig:
    """Suites every cell's EMA (and the base) is scored on; ``selection`` picks β* (Table 6)."""

    selection: SuiteSpec
    tactics: SuiteSpec | None = None  # Table 1 Acc., Table 4, Figure 5
    hard: SuiteSpec | None = None  # Table 1 Acc_>=2400
    mates: SuiteSpec | None = None  # Tables 3-4, Figure 1 (depth = solver moves)
    real: SuiteSpec | None = None  # Table 1 on real Lichess puzzles: all, by rating bin (Figure 6 right)
    real_hard: SuiteSpec | None = None  # the same, high-rated only (e.g. rating_min: 2000): the hard column
    micro_batch: int = 512
    device: str = "auto"  # torch device of the evaluation (auto: cuda if available)

    def specs(self) -> dict[str, SuiteSpec]:
        """The suites set, by role, in :data:`SUITES` order."""
        return {k: s for k in SUITES if (s := getattr(self, k)) is not None}


@dataclass
class ControlConfig:
    """The supervised puzzle-tuned control (:class:`pdx_lightning.supervised.control.PuzzleControl`)."""

    enabled: bool = False
    pool: list[str] = field(default_factory=list)
    model: dict[str, Any] = field(default_factory=dict)  # further PuzzleControl arguments


@dataclass
class ArenaConfig:
    """``pdx arena`` among the base, the selected cells and the control (Tables 1 and 5)."""

    games: int = 20  # games per pair, argmax round robin (Table 1 Elo)
    base_games: int = 0  # games of each model against the base (Table 1 W-D-L, LOS); 0 = pair games only
    sampled_games: int = 0  # games per pair of the sampled round robin (Table 5 Elo); 0 = skip it
    openings: str | None = None
    args: list[str] = field(default_factory=list)  # further `pdx arena` flags
    models: Literal["selected", "all"] = "selected"  # the β* cell of each arm, or every RL cell
    # fixed players of the argmax arena, label -> `pdx arena --model` spec (sf:nodes=10, uci:CMD); in a
    # spec, {base_file} is the base's resolved file (e.g. the real Lc0 on the same network)
    anchors: dict[str, str] = field(default_factory=dict)


@dataclass
class AnalysesConfig:
    """``pdx eval coverage|diagnostics|recovery`` on the base and the selected cells (when installed), and
    ``pdx eval humans`` (human move matching) when ``humans`` gives its flags."""

    run: list[Analysis] = field(default_factory=list)
    args: dict[str, list[str]] = field(default_factory=dict)  # further flags per analysis
    # `pdx eval humans` flags, at least `--pgn FILE` (the human games): set, the stage runs (humans.json)
    humans: list[str] = field(default_factory=list)


# Mappings passed to the cells' LightningCLI configs unchecked and unchanged (``control.model`` too)
PASSED_THROUGH = ("model", "selfplay", "trainer")
# Keys of the cells' configs the sweep sets itself (from base, terms, betas, games, temperatures, seed,
# steps, out)
OWNED = {
    "model": ("base", "exploration", "beta", "selfplay"),
    "selfplay": ("n_games", "temperature", "seed"),
    "trainer": ("max_steps", "logger", "callbacks"),
}


@dataclass
class SweepConfig:
    """A sweep YAML (``conf/sweep/*.yaml``). Unknown keys are errors."""

    eval: EvalConfig
    out: str = "runs/sweep"
    base: str = "base:small"
    fit_config: str | None = None  # LightningCLI YAML each RL cell starts from (cells override it)
    steps: int = 150
    games: int = 64
    seed: int = 0
    # replicates: every RL cell once per seed. Cells of the first seed keep their plain names (so a sweep
    # run with `seed` alone stays valid), the others end in -s<seed>; beta* is chosen on the first seed.
    # The first must be `seed` (the locked one; the control's). null: [seed]
    seeds: list[int] | None = None
    checkpoint_every: int = 50
    terms: list[Term] = field(default_factory=lambda: list(TERMS))
    temperatures: list[Temperature] = field(default_factory=lambda: list(TEMPERATURES))
    betas: list[float] = field(default_factory=lambda: list(PAPER_BETAS))
    cells: list[str] | None = None  # name globs: run only these cells of the grid (null: every cell)
    # further PDXModule arguments (learning rates, algorithm settings: either model.algorithm.<key> or, as
    # the sweep YAMLs written before it existed, model.<key> / selfplay.<key>; rl.settings.MOVED_KEYS)
    model: dict[str, Any] = field(default_factory=dict)
    selfplay: dict[str, Any] = field(default_factory=dict)  # further SelfPlayConfig fields (and moved settings)
    trainer: dict[str, Any] = field(default_factory=dict)  # further Trainer arguments, every cell
    control: ControlConfig = field(default_factory=ControlConfig)
    arena: ArenaConfig | None = None
    analyses: AnalysesConfig | None = None

    def __post_init__(self) -> None:
        if any(b <= 0 for b in self.betas):
            raise ValueError(f"betas must be > 0 (beta = 0 is the '{UNREGULARIZED}' term: list it in terms)")
        if min(self.steps, self.games, self.checkpoint_every) < 1:
            raise ValueError("steps, games and checkpoint_every must be >= 1")
        for key, owned in OWNED.items():
            given = set(getattr(self, key))
            if key == "model":  # today's layout: the algorithm's settings in model.algorithm (rl.settings)
                given |= set(self.model.get("algorithm") or {}) & {"exploration", "beta", "temperature"}
            owned_here = set(owned) | ({"temperature"} if key == "model" else set())
            if clash := sorted(given & owned_here):
                raise ValueError(
                    f"{key}: {clash} are set by the sweep itself (from base, terms, betas, "
                    f"games, temperatures, seed, steps, out)"
                )
        if self.seeds is not None:
            if not self.seeds or len(set(self.seeds)) != len(self.seeds) or any(x < 0 for x in self.seeds):
                raise ValueError(f"seeds: expected distinct seeds >= 0, got {self.seeds}")
            if self.seeds[0] != self.seed:
                raise ValueError(
                    f"seeds: the first seed ({self.seeds[0]}) must be `seed` ({self.seed}): its cells "
                    f"keep their plain names and pick beta*"
                )
        if self.control.enabled and not self.control.pool:
            raise ValueError("control.enabled needs control.pool (puzzle CSVs disjoint from every eval suite)")
        if self.cells is not None:
            grid = [c.name for c in plan(replace(self, cells=None)) if c.kind == "rl"]
            if unmatched := [g for g in self.cells if not fnmatch.filter(grid, g)]:
                raise ValueError(f"cells: {unmatched} match no cell of the grid {grid}")


# ---------------------------------------------------------------- reading it


def load_config(path: str | Path) -> SweepConfig:
    """Read and check a sweep YAML; errors name the file and the key."""
    import yaml  # noqa: PLC0415

    check_config_path(path, "--config: ")
    try:  # pdx:<preset>, or a shipped conf/... (pdx_lightning.files.resources); size and aliases bounded
        data = yaml.safe_load(read_config_text(resolve_path(path)))
    except (OSError, yaml.YAMLError) as e:
        raise SweepConfigError(f"{path}: cannot read the sweep config: {e}") from None
    return parse_config(data, str(path))


def parse_config(data: Any, source: str = "sweep config") -> SweepConfig:
    """A :class:`SweepConfig` from a YAML document's mapping (``source`` names it in errors)."""
    from jsonargparse import ArgumentError  # noqa: PLC0415

    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SweepConfigError(f"{source}: expected a mapping of sweep keys, got {data!r}")
    parser = _parser()
    try:
        parsed = parser.instantiate(parser.parse_object(_expand_shorthand(copy.deepcopy(data))))
        for key in PASSED_THROUGH:  # as written: jsonargparse re-reads their strings as YAML ('007' -> 7)
            if isinstance(data.get(key), dict):
                parsed[key] = dict(data[key])
        if isinstance(data.get("control"), dict) and isinstance(data["control"].get("model"), dict):
            parsed["control"].model = dict(data["control"]["model"])
        cfg = SweepConfig(**{f.name: parsed[f.name] for f in fields(SweepConfig)})
    except ArgumentError as e:
        raise SweepConfigError(f"{source}: {_explain(str(e), data)}") from None
    except ValueError as e:  # a __post_init__ check
        raise SweepConfigError(f"{source}: {e}") from None
    if cfg.fit_config:  # read by every RL cell (train.fit_config): a moved shipped config fails now
        check_config_path(cfg.fit_config, f"{source}: fit_config: ")
    return cfg


def _expand_shorthand(data: dict) -> dict:
    """``eval.<suite>: path(s)`` → ``{path: [...]}`` and a suite's ``path: str`` → ``[str]``."""
    ev = data.get("eval")
    if not isinstance(ev, dict):
        return data
    out = dict(ev)
    for k in SUITES:
        spec = out.get(k)
        if isinstance(spec, (str, list)):
            spec = {"path": spec}
        if isinstance(spec, dict) and isinstance(spec.get("path"), str):
            spec = {**spec, "path": [spec["path"]]}
        out[k] = spec
    return {**data, "eval": {k: v for k, v in out.items() if k in ev}}


@functools.lru_cache(maxsize=1)
def _parser():
    from jsonargparse import ArgumentParser  # noqa: PLC0415

    parser = ArgumentParser(exit_on_error=False, prog="pdx sweep --config")
    parser.add_class_arguments(SweepConfig)
    return parser


def _explain(message: str, data: dict) -> str:
    """jsonargparse's (multi-line, nested) error as one line naming the key; ``data``: the parsed document."""
    keys = re.findall(r'Parser key "([^"]+)"', message)
    where = ".".join(keys)
    options = re.findall(r"Option '([^']+)' is not accepted", message)
    unknown = [f"{where}.{u}" if where else u for u in options]
    groups = re.findall(r"Group '([^']+)' does not accept option '([^']+)'", message)
    unknown += [f"{g}.{o}" for g, o in groups]
    if unknown:
        parent = unknown[0].rpartition(".")[0]
        valid = _keys_at(parent)
        node: Any = data
        for part in filter(None, parent.split(".")):
            node = node.get(part) if isinstance(node, dict) else None
        bad = sorted(set(node) - set(valid)) if isinstance(node, dict) and valid else []
        bad = bad or sorted({u.rpartition(".")[2] for u in unknown})
        return f"{parent + ': ' if parent else ''}unknown key(s) {bad}" + (
            f"; valid keys: {', '.join(valid)}" if valid else ""
        )
    if m := re.search(r"following arguments are required: (.+)", message):
        return f"missing required key(s) {[k.strip() for k in m.group(1).split(',')]}"
    inner = message[max((m.end() for m in re.finditer(r'Parser key "[^"]+"', message)), default=0) :]
    want = re.search(r"Subtypes: \[(.+?)\]\n|Expected a (.+?)\. Got value:", inner)
    got = re.search(r"(?:Got value|Given value): (.+)", inner)
    if want and got:
        expected = _type_names(want.group(1) or want.group(2))
        return f"{where or 'value'}: expected {expected}, got {got.group(1).strip()}"
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return f"{where}: {' '.join(lines[1:] or lines)}" if where else " ".join(lines)


def _type_names(types: str) -> str:
    """``<class 'int'>, <class 'NoneType'>`` → ``int or null``; a Literal → ``one of a, b``."""
    if lit := re.fullmatch(r"typing\.Literal\[(.+)\]", types.strip()):
        return "one of " + lit.group(1).replace("'", "")
    names = [("null" if n == "NoneType" else n) for n in re.findall(r"<class '(?:[\w.]+\.)?(\w+)'>", types)]
    return " or ".join(names) if names else types


def _keys_at(dotted: str) -> list[str]:
    """The field names of the dataclass at ``dotted`` in :class:`SweepConfig` (``""``: the top level)."""
    cls: Any = SweepConfig
    for part in filter(None, dotted.split(".")):
        hints = typing.get_type_hints(cls) if is_dataclass(cls) else {}
        tp = hints.get(part)
        cls = next((a for a in typing.get_args(tp) if is_dataclass(a)), tp)
    return [f.name for f in fields(cls)] if is_dataclass(cls) else []


# ---------------------------------------------------------------- the cells it plans


@dataclass(frozen=True)
class Cell:
    name: str
    kind: Literal["rl", "control"]
    term: str | None = None
    temperature: str | None = None
    beta: float | None = None
    seed: int = 0


def seeds(cfg: SweepConfig) -> list[int]:
    """The sweep's seeds, the first being ``cfg.seed`` (its cells carry no suffix and pick β*)."""
    return list(cfg.seeds) if cfg.seeds is not None else [cfg.seed]


def plan(cfg: SweepConfig) -> list[Cell]:
    """Every cell of the matrix: ``none`` once per temperature (β = 0), other terms × β, for each seed
    (the first seed's cells, then the next seed's, ...; ``-s<seed>`` after the first); then the control."""
    cells = []
    for i, seed in enumerate(seeds(cfg)):
        for term in cfg.terms:
            for temp in cfg.temperatures:
                for beta in [0.0] if term not in REGULARIZED else cfg.betas:
                    name = f"{term}-{temp}" if term not in REGULARIZED else f"{term}-{temp}-b{beta:g}"
                    cells.append(Cell(name + (f"-s{seed}" if i else ""), "rl", term, temp, beta, seed))
    if cfg.cells is not None:
        cells = [c for c in cells if any(fnmatch.fnmatch(c.name, g) for g in cfg.cells)]
    if cfg.control.enabled:
        cells.append(Cell("control", "control", seed=cfg.seed))
    return cells


def eval_suites(cfg: SweepConfig) -> list[dict]:
    """Every evaluation suite as selected (the control's pool must be disjoint from each)."""
    return [asdict(s) for s in cfg.eval.specs().values()]
