"""Shared fixtures. Stockfish is a required test dependency (CI installs the Debian package)."""

import os
import resource

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


# ---- keeping the default run fast (`pytest`; `pytest -m slow` runs the rest) ---------------------------
# Every test's CPU time (this process plus the subprocesses it waited for: pdx CLIs, Stockfish, DDP ranks)
# is summed; a default-run test above the budget is listed at the end, so a new expensive test is marked
# slow (or shrunk) instead of quietly lengthening everybody's run. CPU, not wall time: a loaded machine
# stretches wall time, not CPU time. Measured in the process that runs the test (an xdist worker, or
# pytest itself) and carried to the summary in the report's user_properties, which xdist sends back.
SLOW_TEST_CPU_S = float(os.environ.get("PDX_SLOW_TEST_CPU_S", "10"))
_cpu_by_test: dict[str, float] = {}
_cpu_start: dict[str, float] = {}


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _cpu_start[item.nodeid] = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    start = _cpu_start.pop(item.nodeid, None) if call.when == "teardown" else None
    if start is not None:
        outcome.get_result().user_properties.append(("cpu_s", _cpu_seconds() - start))


def pytest_runtest_logreport(report):
    cpu = dict(report.user_properties).get("cpu_s") if report.when == "teardown" else None
    if cpu is not None and "slow" not in report.keywords:
        _cpu_by_test[report.nodeid] = cpu


def pytest_terminal_summary(terminalreporter):
    over = sorted(((s, n) for n, s in _cpu_by_test.items() if s > SLOW_TEST_CPU_S), reverse=True)
    if over:
        terminalreporter.section(
            f"default-run tests over {SLOW_TEST_CPU_S:g} s of CPU: mark them "
            f"@pytest.mark.slow or shrink them ($PDX_SLOW_TEST_CPU_S)"
        )
        for s, n in over:
            terminalreporter.write_line(f"{s:6.1f} s  {n}")


# ---- two workers for a whole-suite run (pytest-xdist) ------------------------------------------------
# pyproject's addopts pass `-n auto`; xdist asks this hook how many workers "auto" means. The README's
# commands (no test paths: pytest runs its testpaths) get two, which halves the run on a 2-core machine
# (the tests are single-threaded CPU work); a run of named files or tests (`pytest tests/rl -x`) stays in
# one process, where -x, -s and --pdb behave as usual. $PDX_TEST_WORKERS overrides it; `-n N` on the
# command line wins over both.
def pytest_xdist_auto_num_workers(config):
    if "PDX_TEST_WORKERS" in os.environ:
        return int(os.environ["PDX_TEST_WORKERS"])
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return 0
    return min(2, os.cpu_count() or 1) if (os.cpu_count() or 1) > 1 else 0


def pytest_configure(config):
    # An xdist worker runs torch on one intra-op thread, and so do the commands its tests start (unless a
    # test sets OMP_NUM_THREADS itself): two workers on two cores, each with torch's default of one
    # thread per core, would oversubscribe the machine (and stall spinning threads).
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)
        os.environ.setdefault("OMP_NUM_THREADS", "1")


# ---- warnings: a green run prints none --------------------------------------------------------------
# pyproject.toml turns every warning into an error (filterwarnings = ["error", ...]) and lists, with the
# reason, the third-party ones that are harmless. Each test also runs under the filters `pdx fit` itself
# installs (pdx_lightning.runtime.noise.KNOWN_NOISE: Lightning's notes on choices PDXModule makes on
# purpose, e.g. the `dataloader_iter` step and the EMA held in eval mode), so a test that builds its own
# Trainer sees exactly the warnings a user's fit would show: none.
@pytest.fixture(autouse=True)
def known_noise_filtered():
    from pdx_lightning.runtime.noise import quiet_known_noise

    quiet_known_noise()
    yield


@pytest.fixture
def one_torch_thread():
    """One torch intra-op thread for the test (threads stall badly on an oversubscribed CI box); restored after."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ---- the `cuda` marker: tests that need a CUDA GPU skip without one, saying so -------------------------
def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False on this machine)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
