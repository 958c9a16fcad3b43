"""Shared by the search tests: the golden records of the real Lc0 and Maia-1900 (skips without it)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import chess
import pytest

from pdx_lightning.nets.bundled import BundledNetworkError, resolve_bundled

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "search_golden"


def _maia_missing() -> str | None:
    try:
        resolve_bundled("maia-1900")
    except BundledNetworkError as e:
        return f"base:maia-1900 is not available ({e})"
    return None


needs_maia = pytest.mark.skipif(_maia_missing() is not None, reason=str(_maia_missing()))


@lru_cache(maxsize=1)
def maia():
    import torch

    from pdx_lightning.nets import load_model

    torch.set_num_threads(1)
    return load_model("base:maia-1900")


@lru_cache(maxsize=2)
def golden(name: str) -> dict:
    return json.loads((GOLDEN / name).read_text())


def board_of(moves: str) -> chess.Board:
    b = chess.Board()
    for m in moves.split():
        b.push_uci(m)
    return b
