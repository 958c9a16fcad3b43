"""Matched compute: one output directory holds cells made under one set of settings.

The grid (terms, temperatures, betas) may grow and the stages may change; anything else a finished
cell depends on is recorded in ``<out>/config.lock.json`` at the first run, and a later run with other
settings is refused.

Not locked: the score-only suite roles (``eval.real``, ``eval.real_hard``: real Lichess puzzles). A
suite changes what a cell is scored on, not what it trained on: the RL cells never read ``eval``, the
β* choice reads only ``eval.selection`` (locked), and the control's pool must be disjoint from every
suite, which for the shipped real puzzles holds with zero overlap (checked by a test), so a control
trained before they were added trained on the same pool. A sweep whose cells exist may therefore gain
them (cells already scored get them with ``--rescore``).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from pdx_lightning.experiments.sweep.config import SCORE_ONLY_SUITES, SweepConfig, SweepConfigError
from pdx_lightning.runtime.moved_configs import current_path

LOCKED = ("base", "fit_config", "steps", "games", "seed", "model", "selfplay", "trainer", "eval", "control")
LOCK_FILE = "config.lock.json"


def locked_settings(cfg: SweepConfig) -> dict:
    """The settings of ``cfg`` a lock records: :data:`LOCKED`, ``eval`` without the score-only roles."""
    now = json.loads(json.dumps({k: asdict(cfg)[k] for k in LOCKED}))
    now["eval"] = {k: v for k, v in now["eval"].items() if k not in SCORE_ONLY_SUITES}
    return now


def _comparable(key: str, value):
    """A locked value as compared: ``fit_config`` with a moved shipped config's old path read as its new
    one (a directory locked with ``conf/maia.yaml`` holds cells of ``conf/fit/maia.yaml``)."""
    return current_path(value) if key == "fit_config" else value


def check_lock(cfg: SweepConfig, out: Path) -> None:
    """Record ``cfg``'s locked settings in ``out`` (first run), or refuse settings that differ from them."""
    now = locked_settings(cfg)
    path = out / LOCK_FILE
    fd, name = tempfile.mkstemp(prefix=".config.lock.", dir=out)
    tmp = Path(name)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(now, indent=1))
    try:  # link = create-if-absent with the whole content: of two sweeps started together, exactly one locks
        os.link(tmp, path)
        return
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: exclusive create (a reader may briefly see it empty)
        try:
            with open(path, "x") as f:
                f.write(json.dumps(now, indent=1))
            return
        except FileExistsError:
            pass
    finally:
        tmp.unlink()
    old = json.loads(path.read_text())
    if changed := [k for k in LOCKED if _comparable(k, old.get(k)) != _comparable(k, now[k])]:
        diff = "; ".join(f"{k}: {old.get(k)!r} -> {now[k]!r}" for k in changed)
        raise SweepConfigError(
            f"{out} holds cells made with other settings ({diff}); use another --out, or delete {path} knowingly"
        )
