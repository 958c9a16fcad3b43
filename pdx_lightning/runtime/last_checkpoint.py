"""What ``--ckpt_path last`` resumes, across the runs' ``version_N`` directories.

A ``ModelCheckpoint`` without ``dirpath`` (the shipped configs) keeps every run's checkpoints in its
own log version, ``<save_dir>/<name>/version_N/checkpoints``; ``--ckpt_path last`` then resumes the run
written most recently under ``<save_dir>/<name>`` (:func:`latest`). An explicit ``dirpath`` is one
shared directory, as in Lightning.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint

from pdx_lightning.runtime.log_continuity import MARKER, read_marker


def _last_files(directory: str | os.PathLike) -> list[str]:
    return [
        p
        for p in glob.glob(os.path.join(str(directory), "last*.ckpt"))
        if Path(p).stem == "last" or Path(p).stem.startswith("last-")
    ]


def _run_root(trainer: L.Trainer) -> Path | None:
    """``<save_dir>/<name>`` of the first logger: where a ``dirpath``-less ModelCheckpoint puts each
    run's ``version_N/checkpoints`` (Lightning's rule)."""
    if not trainer.loggers:
        return None
    lg = trainer.loggers[0]
    save_dir = lg.save_dir if lg.save_dir is not None else trainer.default_root_dir
    return Path(save_dir) / str(lg.name or "")


def _version_of(dirname: str) -> int | str:
    m = re.fullmatch(r"version_(\d+)", dirname)
    return int(m.group(1)) if m else dirname


def latest(trainer: L.Trainer) -> tuple[str | None, list]:
    """What ``--ckpt_path last`` continues: ``(checkpoint, [])`` or, for a run killed before its first
    checkpoint, ``(None, its logger versions)``; ``(None, [])`` when there is nothing (a fresh run).

    Explicit ``dirpath``\\ s: the newest ``last*.ckpt`` there, else their version marker. Callbacks
    without one: the run directory under ``<save_dir>/<name>`` written most recently (its newest
    ``last*.ckpt`` or version marker); in that directory a checkpoint beats the marker (a resumed run
    rewrites the marker at its start)."""
    explicit, versioned = [], False
    for cb in trainer.checkpoint_callbacks:
        if isinstance(cb, ModelCheckpoint):
            if cb.dirpath:
                explicit.append(cb.dirpath)
            else:
                versioned = True
    found = [p for d in explicit for p in _last_files(d)]
    if found:
        return max(found, key=os.path.getmtime), []
    for d in explicit:
        if (versions := read_marker(d)) is not None:
            return None, versions
    root = _run_root(trainer) if versioned else None
    if root is None or not root.is_dir():
        return None, []
    runs = []  # (newest activity, version dir)
    for ckpt_dir in root.glob("*/checkpoints"):
        stamps = [os.path.getmtime(p) for p in _last_files(ckpt_dir)]
        if (ckpt_dir / MARKER).is_file():
            stamps.append(os.path.getmtime(ckpt_dir / MARKER))
        if stamps:
            runs.append((max(stamps), ckpt_dir))
    if not runs:
        return None, []
    ckpt_dir = max(runs, key=lambda r: r[0])[1]
    files = _last_files(ckpt_dir)
    if files:
        return max(files, key=os.path.getmtime), []
    versions = read_marker(ckpt_dir) or []
    return None, versions or [_version_of(ckpt_dir.parent.name)]
