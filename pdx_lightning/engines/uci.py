"""The network as a UCI engine: ``pdx uci --model M`` (or ``python -m pdx_lightning.engines.uci``).

``go nodes N`` with N ≥ 2 (or the option ``Nodes``, ``--nodes``, for a ``go`` without ``nodes``)
searches: pdx's PUCT with Lc0 v0.31's semantics (:mod:`pdx_lightning.search`; ``--search
key=value,...`` sets its other settings, e.g. ``cpuct=2,reuse=0``), keeping the game's tree between
``position`` commands of one game as Lc0 does, and plays the most visited move; ``searchmoves`` then
picks the best of the listed moves (the search itself visits every move). Its ``info`` line carries
the search's depth (mean), seldepth, nodes (root visits), nps, the root's W/D/L and the principal
variation. Otherwise (``Nodes`` 1, the default) every ``go`` is one forward pass, whatever its other
limits (``depth``, ``movetime``, clocks, ``infinite`` … are accepted and ignored, except
``searchmoves``, which restricts the choice). The move is the argmax of the
policy (``Temperature`` 0, the default) or a draw from μ ∝ π^{1/τ} (Eq. 6):
``setoption name Temperature value 1`` samples raw π, ``value adaptive`` uses
τ = H(WDL) of the position (Eq. 5), as the adaptive arms play. A ``nodes`` outside
[1, ``MAX_NODES``] is one ``info string error`` and is clamped into it.

A searched ``go`` runs in its own thread while the engine reads on, as Lc0's and Stockfish's do:
``isready`` is answered at once, ``stop`` and ``quit`` end the search after the network call in
flight with the best move so far, ``ponderhit`` lets it run on to its nodes; any other command
(``position``, ``go``, ``setoption`` …) first stops it and sends its ``bestmove``. The end of input
is ``quit``: ``printf 'go nodes 800\n' | pdx uci …`` stops at once; a script keeps the pipe open until
the ``bestmove`` (as python-chess and GUIs do) to let a search finish.

Before ``bestmove`` the engine sends
``info depth 1 seldepth 1 nodes 1 time T score cp X wdl W D L pv MOVE``:
W/D/L are the value head's probabilities (per mille) for the side to move,
and ``cp`` maps its expected score s = W + D/2 through Lichess's logistic
win-probability model s = 1 / (1 + exp(−0.00368208·cp)), i.e.
``cp = ln(s / (1 − s)) / 0.00368208`` (s clipped to [1e-6, 1 − 1e-6], so
|cp| ≤ 3752): +100 cp ≈ 59 % expected score.

What a GUI or a bot can rely on:

* every ``go`` is answered by exactly one ``bestmove``. ``go infinite`` / ``go ponder`` hold it
  until ``stop``, ``ponderhit``, the next ``go``, ``ucinewgame``, ``quit`` or the end of input.
  When there is nothing to play — no legal move, a refused position, an internal error — the answer
  is ``bestmove 0000`` after an ``info string`` that says why;
* a ``position`` python-chess's ``Board.status()`` rejects (e.g. the side not to move in check),
  with a halfmove clock above ``MAX_HALFMOVE_CLOCK``, or with an illegal move in ``moves`` is refused
  as a whole: ``info string error: …``, the last good position stays (``d`` shows it), and every
  ``go`` answers ``bestmove 0000`` until a ``position`` or ``ucinewgame`` is accepted — the engine
  never answers a position the GUI did not mean;
* any other malformed input gets ``info string error: …`` and changes nothing; a line longer than
  ``MAX_LINE_CHARS`` is skipped without being held in memory (a ``go`` so long still gets its
  ``bestmove 0000``); bytes that are not UTF-8 read as U+FFFD;
* ``quit``, the end of input (the GUI or bot died) and SIGTERM / SIGHUP end the process with exit 0 at
  any moment, during the model load too; SIGINT (Ctrl-C) ends it at once with 130, without a traceback;
* flags and options are bounded alike (``--threads`` = ``Threads``, ``--seed`` = ``Seed``, as advertised
  in answer to ``uci``); a bad flag or a ``--model`` file that does not exist is one line on stderr and
  exit 2 before anything is answered. A model that fails to load (a corrupt file, an unknown
  ``base:`` name) is reported at ``isready`` / ``go`` as an ``info string`` and one line on stderr, and
  the process exits 2.

The model loads in a background thread, so ``uci`` is answered at once; ``isready`` and ``go`` wait
for it. ``d`` prints the current FEN.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

import chess

from pdx_lightning.errors import UserError
from pdx_lightning.files.resources import resolve_path

if TYPE_CHECKING:
    import torch

    from pdx_lightning.search import BatchedSearch
    from pdx_lightning.search.spec import SearchSpec

LICHESS_K = 0.00368208  # Lichess's cp -> win-probability logistic slope
GO_INT_KEYS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime")
GO_FLAGS = ("infinite", "ponder")
_GO_INT = re.compile(r"-?[0-9]{1,18}")  # go's limits are ignored, only checked: no int() of a 5000-digit token
_LOAD_LOCK = threading.Lock()
MAX_NODES = 1_000_000  # pdx_lightning.search.settings.MAX_NODES (tests/engines check they agree)
SPIN_BOUNDS = {"Seed": (0, 2147483647), "Threads": (1, 256), "Nodes": (1, MAX_NODES)}  # as advertised to `uci`
SPIN_DEFAULTS = {"Seed": 0, "Threads": 1, "Nodes": 1}
# A command line is read at most this long; the rest of a longer line is read in chunks and dropped.
# The longest legal game under FIDE's 75-move rule is under 17,700 plies (~90 KB as a `position` line).
MAX_LINE_CHARS = 1 << 20
_DISCARD_CHUNK = 1 << 16
# FIDE's 75-move rule ends a game at a halfmove clock of 150; far above that is not a game, and a huge
# clock (python-chess takes any integer) overflows the network's rule-50 input.
MAX_HALFMOVE_CLOCK = 10_000
NULL_MOVE = "bestmove 0000"


class UciOptionError(UserError, ValueError):
    """A bad ``pdx uci`` flag or ``setoption`` value (the ``pdx`` command prints it as one line, exit 2)."""


class ModelUnavailable(Exception):
    """The model failed to load; the engine answers what it must and exits with ``code``."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class PeerGone(Exception):
    """Writing to the GUI failed: its end of the pipe is closed; nothing is left to answer."""


def score_to_cp(s: float) -> int:
    """Expected score → centipawns through the logistic above."""
    s = min(max(s, 1e-6), 1.0 - 1e-6)
    return round(math.log(s / (1.0 - s)) / LICHESS_K)


def check_spin(key: str, value: object, flag: str | None = None) -> int:
    """A spin option's value (``Seed``, ``Threads``) within its advertised bounds, or UciOptionError."""
    lo, hi = SPIN_BOUNDS[key]
    text = str(value).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 10 and lo <= int(text) <= hi):
        raise UciOptionError(f"{flag or key} must be an integer in [{lo}, {hi}], got {str(value)[:40]!r}")
    return int(text)


def check_temperature(value: str, flag: str = "Temperature") -> str:
    """``adaptive`` or a finite number ≥ 0 (as given), or UciOptionError."""
    if value == "adaptive":
        return value
    try:
        ok = math.isfinite(float(value)) and float(value) >= 0
    except ValueError:
        ok = False
    if not ok:
        raise UciOptionError(f"{flag} must be 'adaptive' or a finite number >= 0, got {value[:40]!r}")
    return value


def check_model_name(name: str) -> None:
    """Refuse, before anything is answered, a ``--model`` that names a file that is not there (what can be
    told without importing torch; ``random:`` presets and wheel ``base:`` networks are checked by the load)."""
    if name.startswith(("random:", "base:")):
        return
    if not Path(resolve_path(name)).is_file():
        raise UciOptionError(
            f"--model {name!r}: no such file (expected base:<name>, random:<preset>, a .ckpt, a .pt or an Lc0 .pb.gz)"
        )


def check_search(text: str) -> SearchSpec:
    """``--search key=value,...``: the spec (settings, reuse, ``value=`` network), or UciOptionError naming
    the bad part (a ``value=`` file that is not there included)."""
    from pdx_lightning.search.spec import parse_search_options  # noqa: PLC0415

    try:
        spec = parse_search_options(text)
    except UserError as e:
        raise UciOptionError(" ".join(str(e).split())) from None
    if spec.value_model is not None:
        try:
            check_model_name(spec.value_model)
        except UciOptionError as e:
            raise UciOptionError(f"--search value=: {str(e).removeprefix('--model ')}") from None
    return spec


def _short(token: str) -> str:
    return repr(token[:20] + ("…" if len(token) > 20 else ""))


class UciEngine:
    """Protocol state machine; ``handle(line)`` returns False on ``quit``."""

    def __init__(
        self,
        model_name: str,
        out: TextIO = sys.stdout,
        temperature: str = "0",
        seed: int | str = 0,
        threads: int | str = 1,
        nodes: int | str = 1,
        search: str = "",
    ) -> None:
        self.model_name, self.out = model_name, out
        self.options = {
            "Temperature": check_temperature(temperature, "--temperature"),
            "Seed": str(check_spin("Seed", seed, "--seed")),
            "Threads": str(check_spin("Threads", threads, "--threads")),
            "Nodes": str(check_spin("Nodes", nodes, "--nodes")),
            "UCI_ShowWDL": "true",
        }
        spec = check_search(search)
        self.search_settings, self.search_reuse, self.value_model_name = spec.settings, spec.reuse, spec.value_model
        self.searcher: BatchedSearch | None = None  # made at the first searched go
        self.root = chess.STARTING_FEN
        self.board = chess.Board()
        self.pending: str | None = None  # bestmove held back by go infinite / ponder
        # a searched go runs in this thread while the loop reads on (stop, isready, quit answered at once)
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        self._hold = False  # the search in flight was go infinite / ponder: its bestmove waits for stop
        self._out_lock = threading.Lock()  # the worker's info / bestmove and the loop's replies, whole lines
        self._peer_gone: PeerGone | None = None  # the worker's write failed
        self.refused: str | None = None  # why the last position command was refused (go answers 0000)
        self._threads_set = False
        # set by the loader thread: every attribute exists before it starts
        self.model: torch.nn.Module | None = None
        self.gen: torch.Generator | None = None
        self.load_error: BaseException | None = None
        self._loader = threading.Thread(target=self._load, daemon=True)
        self._loader.start()

    # -- model ------------------------------------------------------------------------------
    @property
    def loading(self) -> bool:
        """The loader thread is still running (inside torch: see ``run`` for why that matters at exit)."""
        return self._loader.is_alive()

    def _load(self) -> None:
        try:
            import torch  # noqa: PLC0415  (heavy: imported off the protocol thread)

            from pdx_lightning.nets import load_model  # noqa: PLC0415
            from pdx_lightning.nets.composed import compose  # noqa: PLC0415

            with _LOAD_LOCK:  # random: models seed torch's global RNG: one load at a time per process
                value = load_model(self.value_model_name) if self.value_model_name is not None else None
                self.model = compose(load_model(self.model_name), value)
            self.gen = torch.Generator().manual_seed(int(self.options["Seed"]))
        except BaseException as e:  # noqa: BLE001  (reported on the protocol thread)
            self.load_error = e

    def _ready(self) -> None:
        """Wait for the model; ModelUnavailable if it failed to load."""
        if self._loader.is_alive() or self.load_error is not None:
            self._loader.join()
            e = self.load_error
            if e is not None:
                why = " ".join(str(e).split()) or type(e).__name__
                raise ModelUnavailable(
                    f"cannot load model {self.model_name!r}: {why}", 2 if isinstance(e, UserError) else 1
                )
        if not self._threads_set:  # on the protocol thread, which runs the forward (OpenMP threads are per thread)
            import torch  # noqa: PLC0415

            torch.set_num_threads(int(self.options["Threads"]))
            self._threads_set = True

    def _unavailable(self, e: ModelUnavailable, answer: str | None = None) -> NoReturn:
        self.error(str(e))
        if answer:
            self.send(answer)
        print(f"pdx uci: error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(e.code)

    # -- output -----------------------------------------------------------------------------
    def send(self, line: str) -> None:
        try:
            with self._out_lock:
                self.out.write(line + "\n")
                self.out.flush()
        except (OSError, ValueError) as e:  # a broken pipe, a closed stream: the GUI is gone
            raise PeerGone(str(e)) from None

    def error(self, msg: str) -> None:
        self.send(f"info string error: {msg}")

    def flush_pending(self) -> None:
        """Answer a held ``go infinite`` / ``go ponder`` now (each ``go`` gets exactly one ``bestmove``)."""
        with self._out_lock:
            line, self.pending, self._hold = self.pending, None, False
        if line:
            self.send(line)

    @property
    def searching(self) -> bool:
        """A searched ``go`` is still running in its thread."""
        return self._worker is not None and self._worker.is_alive()

    def settle(self) -> None:
        """End the search in flight now (its best move so far) and answer every ``go`` still unanswered:
        before any command but ``isready`` / ``ponderhit`` / ``debug``, at ``quit`` and at the end of input."""
        if self._worker is not None:
            self._stop.set()
            self._worker.join()
            self._worker = None
            self._stop.clear()
        self.flush_pending()
        if self._peer_gone is not None:
            raise self._peer_gone

    def _search_in_thread(self, nodes: int, searchmoves: list[chess.Move]) -> None:
        try:
            import torch  # noqa: PLC0415

            torch.set_num_threads(int(self.options["Threads"]))  # OpenMP's thread count is per thread
            try:
                line = self._tree_search(nodes, searchmoves)
            except Exception as e:  # noqa: BLE001  (a bestmove for every go, even after an internal error)
                self.error(f"go: internal error, no move: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
                line = NULL_MOVE
            with self._out_lock:
                if self._hold:
                    self.pending, line = line, ""
            if line:
                self.send(line)
        except PeerGone as e:
            self._peer_gone = e

    # -- commands ---------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        tokens = line.strip().split()
        if not tokens:
            return True
        cmd, args = tokens[0], tokens[1:]
        if cmd == "quit":
            self.settle()
            return False
        method = getattr(self, f"cmd_{cmd}", None)
        if method is None:
            self.error(f"unknown command {line.strip()[:80]!r}")
            return True
        if cmd not in ("isready", "ponderhit", "debug"):  # the GUI moved on: the search in flight answers now
            self.settle()
        try:
            method(args)
        except ModelUnavailable as e:
            self._unavailable(e)
        except (SystemExit, PeerGone):
            raise
        except Exception as e:  # noqa: BLE001  (never die on input)
            self.error(f"{cmd}: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
        return True

    def handle_overlong(self, head: str, length: int) -> None:
        """A line longer than MAX_LINE_CHARS (``head``: its first MAX_LINE_CHARS characters) is refused."""
        tokens = head.split(maxsplit=1)
        cmd = tokens[0] if tokens else ""
        if cmd == "go":  # a held search is answered first: the reason below belongs to this go's 0000
            self.settle()
        self.error(f"line of {length} characters (more than {MAX_LINE_CHARS}) starting {cmd[:20]!r} ignored")
        if cmd == "go":  # a GUI waits for its bestmove
            self.send(NULL_MOVE)
        elif cmd == "position":  # the GUI meant another position: do not answer the last one
            self.refused = f"its line was longer than {MAX_LINE_CHARS} characters"

    def cmd_uci(self, args: list[str]) -> None:
        self.send(f"id name pdx_lightning ({self.model_name})")
        self.send("id author pdx_lightning")
        self.send("option name Temperature type string default 0")
        for key, (lo, hi) in SPIN_BOUNDS.items():
            self.send(f"option name {key} type spin default {SPIN_DEFAULTS[key]} min {lo} max {hi}")
        self.send("option name UCI_ShowWDL type check default true")
        self.send("uciok")

    def cmd_isready(self, args: list[str]) -> None:
        self._ready()
        self.send("readyok")

    def cmd_debug(self, args: list[str]) -> None:
        pass

    def cmd_register(self, args: list[str]) -> None:
        pass  # nothing to register

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self.root, self.board, self.refused = chess.STARTING_FEN, chess.Board(), None
        if self.searcher is not None:
            self.searcher.forget(0)

    def cmd_d(self, args: list[str]) -> None:
        state = f"; the last position command was refused: {self.refused}" if self.refused else ""
        self.send(f"info string fen {self.board.fen()} moves {len(self.board.move_stack)}{state}")

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise ValueError("usage: setoption name <id> [value <x>]")
        k = args.index("value") if "value" in args else len(args)
        name, value = " ".join(args[1:k]), " ".join(args[k + 1 :])
        key = next((o for o in self.options if o.lower() == name.lower()), None)
        if key is None:
            raise ValueError(f"no such option {name[:40]!r}")
        if key == "Temperature":
            check_temperature(value)
        elif key == "UCI_ShowWDL":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"UCI_ShowWDL must be true or false, got {value[:40]!r}")
            value = value.lower()
        else:  # spin options: the advertised bounds (a huge Threads would ask torch for that many threads)
            value = str(check_spin(key, value))
        self.options[key] = value
        if key == "Seed":
            self._ready()
            assert self.gen is not None  # _ready(): loaded
            self.gen.manual_seed(int(value))
        elif key == "Threads":
            self._threads_set = False
            self._ready()

    def cmd_position(self, args: list[str]) -> None:
        try:
            self._position(args)
        except ValueError as e:
            self.refused = " ".join(str(e).split())[:300]
            raise ValueError(f"{self.refused}; position refused, the last good one kept ({self.board.fen()})") from None
        self.refused = None

    def _position(self, args: list[str]) -> None:
        k = args.index("moves") if "moves" in args else len(args)
        head, moves = args[:k], args[k + 1 :]
        if head == ["startpos"]:
            root = chess.STARTING_FEN
        elif head and head[0] == "fen" and len(head) > 1:
            fen = " ".join(head[1:])
            board = chess.Board(fen)  # ValueError: not a FEN
            self._check_board(board, f"the FEN {fen[:120]!r}")
            root = board.fen()
        else:
            raise ValueError("usage: position startpos|fen <fen> [moves <m1> ...]")
        known = [m.uci() for m in self.board.move_stack]
        if root == self.root and moves[: len(known)] == known:
            board, start = self.board, len(known)  # the same game, extended: replay only the new moves
        else:
            board, start = chess.Board(root), 0
        pushed = 0
        try:
            for n, uci in enumerate(moves[start:], start + 1):
                try:
                    move = chess.Move.from_uci(uci)
                except ValueError:
                    move = None
                if move is None or not board.is_legal(move):
                    raise ValueError(f"illegal move {_short(uci)} (move {n} of the position command) in {board.fen()}")
                board.push(move)
                pushed += 1
            self._check_board(board, f"the position after the moves, {board.fen()[:120]!r},")
        except ValueError:
            if board is self.board:  # extended in place: back to the last good position
                for _ in range(pushed):
                    board.pop()
            raise
        self.root, self.board = root, board

    @staticmethod
    def _check_board(board: chess.Board, what: str) -> None:
        status = board.status()
        if status != chess.STATUS_VALID:
            flags = ", ".join(str(f.name) for f in chess.Status if f in status)
            raise ValueError(f"{what} is not a valid position ({flags})")
        if board.halfmove_clock > MAX_HALFMOVE_CLOCK:
            raise ValueError(
                f"{what} has a halfmove clock of {str(board.halfmove_clock)[:20]}, above {MAX_HALFMOVE_CLOCK}"
            )

    def _parse_go(self, args: list[str]) -> tuple[dict, list[chess.Move]]:
        """The flags (``infinite``, ``ponder``; ``nodes``: its value, checked by ``cmd_go``) and the legal
        ``searchmoves``; one ``info string`` for each kind of bad token (a count and the first few, however
        many there are)."""
        flags: dict = {}
        searchmoves: list[chess.Move] = []
        malformed: list[str] = []
        not_legal: list[str] = []
        i = 0
        while i < len(args):
            tok = args[i]
            if tok in GO_INT_KEYS and i + 1 < len(args) and _GO_INT.fullmatch(args[i + 1]):
                if tok == "nodes":
                    flags["nodes"] = int(args[i + 1])  # at most 18 digits (_GO_INT)
                i += 2  # the other limits are accepted and ignored
            elif tok in GO_FLAGS:
                flags[tok], i = True, i + 1
            elif tok == "searchmoves":
                i += 1
                while i < len(args) and args[i] not in GO_INT_KEYS + GO_FLAGS:
                    try:
                        m = chess.Move.from_uci(args[i])
                    except ValueError:
                        m = None
                    if m is None or not self.board.is_legal(m):
                        not_legal.append(args[i])
                    elif m not in searchmoves:
                        searchmoves.append(m)
                    i += 1
            else:
                malformed.append(tok)
                i += 1
        for what, bad in (("go: ignoring malformed", malformed), ("searchmoves: ignoring, not legal here,", not_legal)):
            if bad:
                more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
                self.error(f"{what} token{'s' if len(bad) > 1 else ''} {', '.join(map(_short, bad[:3]))}{more}")
        return flags, searchmoves

    def cmd_go(self, args: list[str]) -> None:
        # handle() settled first: a GUI that skipped stop has the previous search's bestmove already
        flags: dict = {}
        try:
            self._ready()
            flags, searchmoves = self._parse_go(args)
            nodes = flags.get("nodes", int(self.options["Nodes"]))
            lo, hi = SPIN_BOUNDS["Nodes"]
            if not lo <= nodes <= hi:
                clamped = min(max(nodes, lo), hi)
                self.error(f"go nodes must be in [{lo}, {hi:,}], got {nodes}; searching {clamped:,}")
                nodes = clamped
            if self.refused:
                self.error(f"no position to search: the last position command was refused ({self.refused})")
                line = NULL_MOVE
            elif nodes > 1 and any(self.board.legal_moves):
                self._hold = bool(flags.get("infinite") or flags.get("ponder"))
                self._worker = threading.Thread(target=self._search_in_thread, args=(nodes, searchmoves), daemon=True)
                self._worker.start()
                return
            elif nodes > 1:
                line = self._tree_search(nodes, searchmoves)  # no legal move: says why, 0000
            else:
                line = self._search(searchmoves)
        except ModelUnavailable as e:
            self._unavailable(e, NULL_MOVE)
        except PeerGone:
            raise
        except Exception as e:  # noqa: BLE001  (a bestmove for every go, even after an internal error)
            self.error(f"go: internal error, no move: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
            line = NULL_MOVE
        if flags.get("infinite") or flags.get("ponder"):
            self.pending = line
        else:
            self.send(line)

    def cmd_stop(self, args: list[str]) -> None:
        pass  # handle() settled: the search in flight stopped and answered

    def cmd_ponderhit(self, args: list[str]) -> None:
        """The ponder move was played: the search in flight runs on to its nodes and answers then."""
        with self._out_lock:  # the worker holds its answer only while _hold: race-free with it
            self._hold = False
            line, self.pending = self.pending, None
        if line:
            self.send(line)

    def _search(self, searchmoves: list[chess.Move]) -> str:
        """One forward pass: sends the ``info`` line, returns the ``bestmove`` line.

        The lean path of a single position (the latency a GUI sees): one legal-move generation, the
        network called directly, the argmax over the legal logits (the softmax only when sampling)."""
        import torch  # noqa: PLC0415

        from pdx_lightning.chesscore.encoding import encode_boards  # noqa: PLC0415
        from pdx_lightning.chesscore.moves import index_to_move, legal_mask  # noqa: PLC0415
        from pdx_lightning.chesscore.policy import masked_log_softmax, play_temperature, tempered_log_probs  # noqa: PLC0415

        t0 = time.perf_counter()
        board = self.board
        legal = searchmoves or list(board.legal_moves)
        if not legal:
            mated = board.is_check()
            self.send(f"info string no legal move: {'checkmate' if mated else 'stalemate'}")
            self.send("info depth 0 score " + ("mate 0" if mated else "cp 0"))
            return NULL_MOVE
        mask = legal_mask([board], [legal])  # (1, 4288)
        assert self.model is not None  # _ready(): loaded
        with torch.inference_mode():
            out = self.model(torch.from_numpy(encode_boards([board])))
        logits, wdl = out.policy.float(), torch.softmax(out.wdl.float(), dim=-1)
        if not (bool(torch.isfinite(logits[mask]).all()) and bool(torch.isfinite(wdl).all())):
            raise ArithmeticError(f"the network's output is not finite in {board.fen()}")
        temp = self.options["Temperature"]
        if temp != "adaptive" and float(temp) == 0:
            idx = int(logits.masked_fill(~mask, float("-inf")).argmax())
        else:
            logp = masked_log_softmax(logits, mask)
            tau = play_temperature(wdl, temp if temp == "adaptive" else float(temp))
            idx = int(torch.multinomial(tempered_log_probs(logp, mask, tau).exp(), 1, generator=self.gen))
        move = index_to_move(idx, board)
        w, d, l_ = (float(v) for v in wdl[0])
        ms = max(1, round((time.perf_counter() - t0) * 1000))
        info = f"info depth 1 seldepth 1 nodes 1 time {ms} score cp {score_to_cp(w + 0.5 * d)}"
        if self.options["UCI_ShowWDL"] == "true":
            pw, pl = round(1000 * w), round(1000 * l_)
            info += f" wdl {pw} {1000 - pw - pl} {pl}"
        self.send(f"{info} pv {move.uci()}")
        return f"bestmove {move.uci()}"

    def _tree_search(self, nodes: int, searchmoves: list[chess.Move]) -> str:
        """pdx's PUCT to ``nodes`` root visits: sends the ``info`` line, returns the ``bestmove`` line."""
        from pdx_lightning.search import BatchedSearch  # noqa: PLC0415

        t0 = time.perf_counter()
        board = self.board
        if not any(board.legal_moves):
            mated = board.is_check()
            self.send(f"info string no legal move: {'checkmate' if mated else 'stalemate'}")
            self.send("info depth 0 score " + ("mate 0" if mated else "cp 0"))
            return NULL_MOVE
        if self.searcher is None:
            assert self.model is not None  # _ready(): loaded
            self.searcher = BatchedSearch(self.model, self.search_settings, slots=1, reuse=self.search_reuse)
        r = self.searcher.search([board], nodes=nodes, stop=self._stop)[0]
        move, pv = r.best, r.pv
        if searchmoves and move not in searchmoves:
            visits = r.visits()
            move = max(searchmoves, key=lambda m: visits.get(m, 0))
            pv = [move]
        root = r.root
        i = root.moves.index(move)
        q, d = float(root.q[i]), root.root_d
        w, l_ = max(0.0, (1.0 + q - d) / 2), max(0.0, (1.0 - q - d) / 2)
        secs = max(time.perf_counter() - t0, 1e-6)
        info = (
            f"info depth {max(1, round(root.mean_depth))} seldepth {max(1, root.max_depth)} nodes {root.root_visits} "
            f"nps {round(root.playouts / secs)} time {max(1, round(secs * 1000))} score cp {score_to_cp(w + 0.5 * d)}"
        )
        if self.options["UCI_ShowWDL"] == "true":
            pw, pl = round(1000 * w), round(1000 * l_)
            info += f" wdl {pw} {1000 - pw - pl} {pl}"
        self.send(f"{info} pv {' '.join(m.uci() for m in pv)}")
        return f"bestmove {move.uci()}"


def read_command(stream: TextIO) -> tuple[str, int]:
    """The next line, at most MAX_LINE_CHARS long: ``(line, 0)``, ``("", 0)`` at the end of input, or
    ``(its first MAX_LINE_CHARS characters, its full length)`` for a longer line, whose rest is read
    in chunks and dropped (a 50 MB line never sits in memory)."""
    line = stream.readline(MAX_LINE_CHARS)
    if len(line) < MAX_LINE_CHARS or line.endswith("\n"):
        return line, 0
    length = len(line)
    while True:
        rest = stream.readline(_DISCARD_CHUNK)
        length += len(rest)
        if not rest or rest.endswith("\n"):
            return line, length


def serve(engine: UciEngine, stdin: TextIO) -> int:
    """The command loop: 0 at ``quit`` or the end of input, the load failure's code if the model failed."""
    try:
        while True:
            line, overlong = read_command(stdin)
            if overlong:
                engine.handle_overlong(line, overlong)
                continue
            if not line or not engine.handle(line):  # EOF or quit
                engine.settle()
                return 0
    except SystemExit as e:
        return int(e.code or 0)
    except PeerGone:
        return 0  # the GUI closed its end: nobody is left to answer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="base:small, a .ckpt/.pt file, an Lc0 .pb.gz, random:tiny")
    parser.add_argument("--temperature", default="0", help="0 = argmax (default), a finite number >= 0, or 'adaptive'")
    lo, hi = SPIN_BOUNDS["Seed"]
    parser.add_argument("--seed", default="0", help=f"sampling seed, {lo}..{hi} (UCI option Seed)")
    lo, hi = SPIN_BOUNDS["Threads"]
    parser.add_argument("--threads", default="1", help=f"torch threads, {lo}..{hi} (UCI option Threads)")
    lo, hi = SPIN_BOUNDS["Nodes"]
    parser.add_argument(
        "--nodes",
        default="1",
        help=f"nodes of a go without 'nodes', {lo}..{hi:,} (UCI option Nodes): 1 is one forward pass, more "
        "searches with pdx's PUCT (Lc0 v0.31's semantics)",
    )
    parser.add_argument(
        "--search",
        default="",
        help="the search's settings as key=value,... (cpuct, cpuct_base, cpuct_factor, fpu_value, "
        "policy_softmax_temp, two_fold_draws, sticky_endgames, cache_size, reuse; Lc0 v0.31's defaults), and "
        "value=MODEL to evaluate with another network's W/D/L while --model's policy guides the search",
    )


def _exit_now(code: int) -> NoReturn:
    """Flush what was answered and end the process without interpreter finalisation (see ``run``)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001  (a closed pipe or a write interrupted by the signal: nothing to save)
            pass
    os._exit(code)


def _ending_signals() -> dict[signal.Signals, int]:
    """The signals that end the engine and their exit codes: SIGTERM / SIGHUP (the GUI or the terminal
    ends it, like ``quit``) 0; SIGINT (Ctrl-C) 130, quietly."""
    ending = {signal.SIGTERM: 0, signal.SIGINT: 130}
    if hasattr(signal, "SIGHUP"):
        ending[signal.SIGHUP] = 0
    return ending


def _take_ending_signals(ending: dict[signal.Signals, int]) -> None:
    _exit_now(ending[signal.Signals(signal.sigwait(set(ending)))])


def _install_signal_handlers() -> None:
    """End the process at an ending signal, whatever its threads are doing.

    A Python handler runs only on the main thread, and only when it gets back to bytecode. The kernel
    delivers a signal sent to the process to any thread that does not block it: the model loader, a
    search, an OpenMP worker of torch. The main thread, asleep in ``read`` on stdin, is then not woken
    and the engine never exits (a SIGTERM to the loader thread hung it in 4 of 4 trials). So on POSIX
    the ending signals are blocked here, before the engine starts any thread (every thread started
    later, torch's included, inherits the mask), and one thread takes them with ``sigwait``. Elsewhere
    (Windows) plain handlers, which is all that platform has."""
    ending = _ending_signals()
    if hasattr(signal, "pthread_sigmask") and hasattr(signal, "sigwait"):
        signal.pthread_sigmask(signal.SIG_BLOCK, set(ending))
        taker = threading.Thread(target=_take_ending_signals, args=(ending,), name="pdx-uci-signals", daemon=True)
        taker.start()
        return
    for sig, code in ending.items():
        signal.signal(sig, lambda *_, c=code: _exit_now(c))


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """``pdx uci``. With the process's own stdin/stdout (no stream given) this never returns: it ends the
    process with ``os._exit`` after flushing. At interpreter exit Python (≤ 3.13) ends a daemon thread
    that is still running — the loader, inside torch's C++ import or model load after a quick ``quit``
    or end of input — with ``pthread_exit``, whose forced unwinding through C++ frames aborts the
    process ("terminate called without an active exception", SIGABRT). The engine holds no files or
    other state that finalisation would save."""
    process = stdin is None and stdout is None
    if process:
        _install_signal_handlers()
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    if hasattr(stdin, "reconfigure"):  # a byte that is not UTF-8 must not kill the engine: it becomes U+FFFD
        stdin.reconfigure(errors="replace")
    check_model_name(args.model)
    engine = UciEngine(
        args.model,
        stdout,
        args.temperature,
        args.seed,
        args.threads,
        getattr(args, "nodes", 1),
        getattr(args, "search", ""),
    )
    rc = serve(engine, stdin)
    if process:
        _exit_now(rc)
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pdx uci", description="the network as a UCI engine")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except UserError as e:
        print(f"pdx uci: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
