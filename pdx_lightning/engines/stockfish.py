"""Locating and opening the Stockfish binary (teacher, oracle, anchor)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path
from typing import cast

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


def open_engine(
    path: str | os.PathLike | None = None,
    threads: int = 1,
    hash_mb: int = 16,
    options: dict | None = None,
    search_timeout: float | None = None,
) -> RestartingEngine:
    """Start Stockfish over UCI with ``threads`` and ``hash_mb`` (plus extra UCI ``options``).

    The engine is a :class:`RestartingEngine`: ``play`` / ``analyse`` are bounded in time
    (``search_timeout``, default ``SEARCH_TIMEOUT``) and survive a crashed or hung process
    (restart + one retry); everything else is python-chess's ``SimpleEngine``.
    """
    return RestartingEngine(
        path,
        threads=threads,
        hash_mb=hash_mb,
        options=options,
        search_timeout=SEARCH_TIMEOUT if search_timeout is None else search_timeout,
    )


# --- Stockfish as a rated opponent (arena anchors) -------------------------------------------
#
# ``sf:nodes=1000``   fixed-node search: reproducible (1 thread, hash cleared per game), the
#                     rungs of a fixed-node ladder as in efficient-self-play.md. Stockfish 15.1
#                     has no published Elo for fixed node counts; place the rungs on a scale
#                     by rating them in the same pool as ``sf:elo=`` players (or your own
#                     calibration) and anchoring there.
# ``sf:elo=1500``     UCI_LimitStrength + UCI_Elo (1350..2850 in 15.1). Stockfish 15.1 maps the
#                     Elo to a fractional Skill Level, level = ((elo − 1346.6)/143.4)^(1/0.806),
#                     calibrated in 2019 (Stockfish PR #2225) with Ordo at TC 60s+0.6s, anchored to
#                     goldfish 1.13 = 2000 on CCRL 40/4 — a CCRL-like engine scale, weakly anchored
#                     (the PR notes a 100-Elo disagreement with CCRL inside its own pool), and
#                     re-parameterized in later Stockfish versions: record the version.
#                     The skill move is picked once iterative deepening completes depth
#                     1 + int(level) (later iterations do not change it), so the default limit is
#                     exactly that depth: the calibrated choice rule, independent of hardware.
# Options after a comma: nodes, depth, movetime (ms), elo, skill (Skill Level 0..20), hash (MB).
# Neither scale is the paper's 2374: that is the Chessformer paper's engine round-robin rating
# of its base network, a third pool (App. F).

SF_ELO_RANGE = (1350, 2850)  # Stockfish 15.1's UCI_Elo bounds


class StockfishSpecError(ValueError):
    """An ``sf:`` player spec that cannot be turned into a Stockfish opponent."""


def is_stockfish_spec(name: str) -> bool:
    return name == "sf" or name.startswith("sf:")


def uci_elo_skill_level(elo: float) -> float:
    """Stockfish 15.1's fractional Skill Level for a UCI_Elo (search.cpp, ``Skill``)."""
    return min(max(((elo - 1346.6) / 143.4) ** (1 / 0.806) if elo > 1346.6 else 0.0, 0.0), 20.0)


def parse_stockfish_spec(spec: str) -> tuple[chess.engine.Limit, dict]:
    """``"sf:nodes=1000"`` / ``"sf:elo=1500"`` / ``"sf:elo=1500,movetime=200"`` → (Limit, UCI options)."""
    if not is_stockfish_spec(spec):
        raise StockfishSpecError(f"{spec!r} is not a Stockfish spec (sf:key=value,...)")
    kv: dict[str, int] = {}
    for part in filter(None, spec[3:].split(",")):
        key, sep, value = part.partition("=")
        if not sep or key not in ("nodes", "depth", "movetime", "elo", "skill", "hash"):
            raise StockfishSpecError(
                f"{spec!r}: bad field {part!r}; use nodes=, depth=, movetime= (ms), elo=, skill=, hash="
            )
        try:
            kv[key] = int(value)
        except ValueError:
            raise StockfishSpecError(f"{spec!r}: {key} must be an integer, got {value!r}") from None
        if kv[key] < (0 if key == "skill" else 1):
            raise StockfishSpecError(f"{spec!r}: {key} must be positive")
    options: dict = {}
    if "hash" in kv:
        options["Hash"] = kv["hash"]
    if "elo" in kv and "skill" in kv:
        raise StockfishSpecError(f"{spec!r}: give elo= or skill=, not both")
    if "elo" in kv:
        if not SF_ELO_RANGE[0] <= kv["elo"] <= SF_ELO_RANGE[1]:
            raise StockfishSpecError(f"{spec!r}: UCI_Elo must be in {SF_ELO_RANGE} for Stockfish 15.1")
        options.update({"UCI_LimitStrength": True, "UCI_Elo": kv["elo"]})
        level = uci_elo_skill_level(kv["elo"])
    elif "skill" in kv:
        if kv["skill"] > 20:
            raise StockfishSpecError(f"{spec!r}: skill must be 0..20")
        options["Skill Level"] = kv["skill"]
        level = float(kv["skill"])
    else:
        level = None
    limit = chess.engine.Limit(
        nodes=kv.get("nodes"), depth=kv.get("depth"), time=kv["movetime"] / 1000 if "movetime" in kv else None
    )
    if limit.nodes is None and limit.depth is None and limit.time is None:
        if level is None or level >= 20:
            raise StockfishSpecError(f"{spec!r}: give a search limit (nodes=, depth= or movetime=)")
        limit = chess.engine.Limit(depth=1 + int(level))
    return limit, options


# --- Fault tolerance: crashed or hung engines -------------------------------------------------
#
# python-chess bounds ``play``/``analyse`` in time only for ``Limit(time=...)``: a node- or
# depth-bounded search of a hung engine (or one stopped by SIGSTOP, a deadlock, a wedged
# NFS binary) waits forever. ``BoundedEngine`` adds a wall-clock bound to every search, and
# ``RestartingEngine`` kills a dead or hung process, starts a fresh one with the same options
# and retries the request once (a second failure raises ``EngineFailure`` naming the position).
# The teacher (``pdx_lightning.supervised.teacher``) runs its own bounded search command with the same policy.

log = logging.getLogger(__name__)

SEARCH_TIMEOUT = 120.0  # seconds; far beyond any node/depth-bounded search we run, finite for a hung engine
# UCI handshake (python-chess defaults to 10 s): a start on a machine oversubscribed by other jobs
# (measured: a starved test's Stockfish missed 10 s) is slow, not broken
STARTUP_TIMEOUT = 60.0
QUIT_GRACE = 2.0  # seconds an engine gets to exit on ``quit`` before it is killed
ENGINE_FAULTS = (chess.engine.EngineError, asyncio.TimeoutError, TimeoutError, OSError)


class EngineFailure(RuntimeError):
    """Stockfish failed (died, errored or hung) twice on the same request; the message names the position."""


def describe_position(board: chess.Board) -> str:
    moves = " ".join(m.uci() for m in board.move_stack)
    return f"FEN {board.fen()!r}" + (f" (after {moves} from {board.root().fen()!r})" if moves else "")


class BoundedEngine(chess.engine.SimpleEngine):
    """``SimpleEngine`` whose node/depth-bounded searches time out after ``search_timeout`` seconds."""

    search_timeout: float | None = SEARCH_TIMEOUT

    def _timeout_for(self, limit):
        t = super()._timeout_for(limit)
        return self.search_timeout if t is None else t


def close_engine(engine: chess.engine.SimpleEngine, grace: float | None = None) -> None:
    """``quit``, and kill the process if it has not exited within ``grace`` seconds (or is hung)."""
    grace = QUIT_GRACE if grace is None else grace
    if not engine.returncode.done() and not engine.protocol.loop.is_closed():
        coro = asyncio.wait_for(engine.protocol.quit(), grace)
        try:
            fut = asyncio.run_coroutine_threadsafe(coro, engine.protocol.loop)
        except RuntimeError:  # the loop stopped meanwhile
            coro.close()
        else:
            try:
                fut.result(grace + 1.0)
            except Exception:  # noqa: BLE001  (dead or hung: the transport close below kills it)
                pass
    try:
        engine.close()  # closes the transport: kills the process if it still runs
    except Exception:  # noqa: BLE001
        pass
    # python-chess can miss the exit of a killed engine whose search was being cancelled (its
    # connection_lost callback raises InvalidStateError before it records the exit code); its
    # event-loop thread, which is not a daemon, would then wait forever and the interpreter could
    # never exit. Record the exit ourselves if python-chess has not within the grace period.
    try:
        engine.returncode.result(timeout=grace)
    except Exception:  # noqa: BLE001

        def _force_exit() -> None:
            if not engine.protocol.returncode.done():
                engine.protocol.returncode.set_result(engine.transport.get_returncode() or -9)

        try:
            engine.protocol.loop.call_soon_threadsafe(_force_exit)
        except RuntimeError:  # loop already closed: nothing is waiting
            pass


class RestartingEngine:
    """A Stockfish process that is restarted when it dies or hangs; ``play``/``analyse`` are retried once.

    Attribute access other than ``play``, ``analyse``, ``restart``, ``quit``, ``close`` goes to the
    current ``SimpleEngine`` (``id``, ``protocol``, ``transport``, ``configure``, ...).
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        threads: int | None = 1,
        hash_mb: int | None = 16,
        options: dict | None = None,
        search_timeout: float | None = SEARCH_TIMEOUT,
        command: list[str] | None = None,
    ) -> None:
        # ``command``: any other UCI engine's command line (``uci:`` arena players); options it lacks are not sent
        self.path = command if command else find_stockfish(path)
        base = {"Threads": threads, "Hash": hash_mb}
        self.config = {**{k: v for k, v in base.items() if v is not None}, **(options or {})}
        self.search_timeout = search_timeout
        self.restarts = 0
        self.engine: BoundedEngine | None = None
        self._start()

    def _start(self) -> None:
        # python-chess types popen_uci as SimpleEngine; it builds cls(...), a BoundedEngine
        engine = cast(BoundedEngine, BoundedEngine.popen_uci(self.path, timeout=STARTUP_TIMEOUT))
        engine.search_timeout = self.search_timeout
        try:
            engine.configure(self.config)
        except BaseException:
            close_engine(engine)
            raise
        self.engine = engine

    def __getattr__(self, name: str):
        engine = self.__dict__.get("engine")
        if engine is None:
            raise AttributeError(name)
        return getattr(engine, name)

    def restart(self) -> None:
        if self.engine is not None:
            close_engine(self.engine)
            self.engine = None
        self._start()

    def quit(self) -> None:
        if self.engine is not None:
            close_engine(self.engine)
            self.engine = None

    close = quit

    def play(self, board: chess.Board, limit: chess.engine.Limit, **kwargs) -> chess.engine.PlayResult:
        return self._call("play", board, limit, **kwargs)

    def analyse(self, board: chess.Board, limit: chess.engine.Limit, **kwargs):
        return self._call("analyse", board, limit, **kwargs)

    def _call(self, method: str, board: chess.Board, *args, **kwargs):
        for attempt in (1, 2):
            try:
                if self.engine is None:
                    self._start()
                return getattr(self.engine, method)(board, *args, **kwargs)
            except ENGINE_FAULTS as exc:
                what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self.restarts += 1
                try:
                    self.restart()  # leave a working engine behind either way
                except ENGINE_FAULTS:
                    self.engine = None
                if attempt == 2:
                    raise EngineFailure(f"Stockfish failed twice ({what}) on {describe_position(board)}") from exc
                log.warning("Stockfish failed (%s) on %s; restarted it, retrying once", what, describe_position(board))
        raise AssertionError("unreachable")
