"""Locating and opening the Stockfish binary (teacher, oracle, anchor)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import chess.engine

INSTALL_HINT = "install it with `sudo apt-get install stockfish` (Debian/Ubuntu) or pass its path"
_DEBIAN_PATH = "/usr/games/stockfish"  # Debian puts it outside the default PATH


class StockfishNotFound(FileNotFoundError):
    """No usable Stockfish binary."""


def find_stockfish(path: str | os.PathLike | None = None) -> str:
    """Path of the Stockfish binary: ``path``, ``$STOCKFISH``, ``stockfish`` on PATH, or Debian's."""
    candidates = [path] if path else [os.environ.get("STOCKFISH"), shutil.which("stockfish"), _DEBIAN_PATH]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    where = f"at {path!r}" if path else "via $STOCKFISH, on PATH or at /usr/games/stockfish"
    raise StockfishNotFound(f"Stockfish not found {where}: {INSTALL_HINT}")


def open_engine(path: str | os.PathLike | None = None, threads: int = 1, hash_mb: int = 16,
                options: dict | None = None) -> chess.engine.SimpleEngine:
    """Start Stockfish over UCI with ``threads`` and ``hash_mb`` (plus extra UCI ``options``)."""
    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish(path))
    engine.configure({"Threads": threads, "Hash": hash_mb, **(options or {})})
    return engine
