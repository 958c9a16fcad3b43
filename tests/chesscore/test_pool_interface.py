"""Both game pools satisfy the one pool protocol (``chesscore.pool_interface.GamePool``): at run time
(``isinstance`` on the runtime-checkable protocol, and every method with the protocol's parameters). The
static check is in the package, which CI's mypy covers: ``game_pool.open_pool`` returns either class as a
``GamePool``."""

from __future__ import annotations

import inspect

import pytest

from pdx_lightning.chesscore import native_core
from pdx_lightning.chesscore.game_pool import BACKENDS, PythonChessPool, open_pool
from pdx_lightning.chesscore.native_pool import NativePool
from pdx_lightning.chesscore.pool_interface import GamePool

METHODS = sorted(name for name, v in vars(GamePool).items() if inspect.isfunction(v) and not name.startswith("_"))


def test_the_protocol_is_what_self_play_calls():
    assert METHODS == [
        "board",
        "close",
        "moves",
        "n_moves",
        "play",
        "plies",
        "positions",
        "push",
        "reset",
        "root_fen",
        "set_board",
    ]
    assert list(GamePool.__annotations__) == ["n"]
    assert not isinstance(object(), GamePool)


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_pools_satisfy_the_protocol(backend):
    if backend == "native" and not native_core.available():
        pytest.skip("compiled chess core not built (pip install -e .)")
    pool: GamePool = open_pool(backend, 3, claim_draws=False, max_plies=None)
    try:
        assert isinstance(pool, GamePool) and pool.n == 3
        assert type(pool) is {"native": NativePool, "python-chess": PythonChessPool}[backend]
        for name in METHODS:
            want = inspect.signature(getattr(GamePool, name)).parameters
            got = inspect.signature(getattr(type(pool), name)).parameters
            assert [(p.name, p.kind, p.default) for p in got.values()] == [
                (p.name, p.kind, p.default) for p in want.values()
            ], f"{type(pool).__name__}.{name}"
    finally:
        pool.close()
