"""Shared fixtures. Stockfish is a required test dependency (CI installs the Debian package)."""
import pytest

from pdx_lightning.engines.stockfish import find_stockfish


@pytest.fixture(scope="session")
def stockfish_path() -> str:
    """Path of the Stockfish binary; a missing binary fails loudly with the install hint."""
    return find_stockfish()


@pytest.fixture(autouse=True)
def rank_zero():
    """Every test starts as rank 0, whatever global rank an earlier test's Trainer (e.g. one built in a
    simulated multi-node worker's environment) left in Lightning's process-wide ``rank_zero_only.rank``
    (a non-zero rank hands loggers a dummy experiment and silences rank-0-only output)."""
    from lightning.fabric.utilities.rank_zero import rank_zero_only as fabric_rzo
    from lightning.pytorch.utilities.rank_zero import rank_zero_only

    saved = [(f, getattr(f, "rank", None)) for f in {rank_zero_only, fabric_rzo}]
    for f, _ in saved:
        f.rank = 0
    yield
    for f, rank in saved:
        f.rank = rank


@pytest.fixture(autouse=True)
def restore_environment():
    """Every test leaves ``os.environ`` as it found it. Lightning's cluster environments write
    MASTER_ADDR / MASTER_PORT / NODE_RANK straight into ``os.environ`` (monkeypatch cannot undo what it
    did not set): a simulated SLURM worker left MASTER_ADDR=gpu07 behind, and a later subprocess DDP
    run waited forever to rendezvous with that host."""
    import os

    saved = dict(os.environ)
    yield
    for k in set(os.environ) - set(saved):
        del os.environ[k]
    os.environ.update(saved)
