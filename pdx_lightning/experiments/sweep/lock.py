"""Matched compute: one output directory holds cells made under one set of settings.

The grid (terms, temperatures, betas) may grow and the stages may change; anything else a finished
cell depends on is recorded in ``<out>/config.lock.json`` at the first run, and a later run with other
settings is refused.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from pdx_lightning.experiments.sweep.config import SweepConfig, SweepConfigError

LOCKED = ("base", "fit_config", "steps", "games", "seed", "model", "selfplay", "trainer", "eval", "control")
LOCK_FILE = "config.lock.json"


def check_lock(cfg: SweepConfig, out: Path) -> None:
    """Record ``cfg``'s locked settings in ``out`` (first run), or refuse settings that differ from them."""
    now = json.loads(json.dumps({k: asdict(cfg)[k] for k in LOCKED}))
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
    if changed := [k for k in LOCKED if old.get(k) != now[k]]:
        diff = "; ".join(f"{k}: {old.get(k)!r} -> {now[k]!r}" for k in changed)
        raise SweepConfigError(f"{out} holds cells made with other settings ({diff}); use another --out, "
                               f"or delete {path} knowingly")
