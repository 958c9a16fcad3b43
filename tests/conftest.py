"""Shared fixtures. Stockfish is a required test dependency (CI installs the Debian package)."""
import pytest

from pdx_lightning.engines.stockfish import find_stockfish


@pytest.fixture(scope="session")
def stockfish_path() -> str:
    """Path of the Stockfish binary; a missing binary fails loudly with the install hint."""
    return find_stockfish()
