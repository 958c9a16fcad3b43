"""The network as a UCI engine: ``pdx uci --model M`` (or ``python -m pdx_lightning.engines.uci``).

Every ``go`` is one forward pass, whatever its limits (``depth``, ``nodes``,
``movetime``, clocks, ``infinite`` … are accepted and ignored, except
``searchmoves``, which restricts the choice). The move is the argmax of the
policy (``Temperature`` 0, the default) or a draw from μ ∝ π^{1/τ} (Eq. 6):
``setoption name Temperature value 1`` samples raw π, ``value adaptive`` uses
τ = H(WDL) of the position (Eq. 5), as the adaptive arms play.

Before ``bestmove`` the engine sends
``info depth 1 seldepth 1 nodes 1 time T score cp X wdl W D L pv MOVE``:
W/D/L are the value head's probabilities (per mille) for the side to move,
and ``cp`` maps its expected score s = W + D/2 through Lichess's logistic
win-probability model s = 1 / (1 + exp(−0.00368208·cp)), i.e.
``cp = ln(s / (1 − s)) / 0.00368208`` (s clipped to [1e-6, 1 − 1e-6], so
|cp| ≤ 3752): +100 cp ≈ 59 % expected score.

``go infinite`` / ``go ponder`` hold ``bestmove`` until ``stop`` /
``ponderhit``, as the protocol requires. Malformed or illegal input never
stops the engine: it answers ``info string error: …`` and keeps its state —
except for an illegal move inside ``position … moves …``, where (like
Stockfish) the moves before it are kept. ``d`` prints the current FEN.
The model loads in a background thread, so ``uci`` is answered at once;
``isready`` and ``go`` wait for it.
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

import chess

if TYPE_CHECKING:
    import torch

LICHESS_K = 0.00368208  # Lichess's cp -> win-probability logistic slope
GO_INT_KEYS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime")
GO_FLAGS = ("infinite", "ponder")
_LOAD_LOCK = threading.Lock()
SPIN_BOUNDS = {"Seed": (0, 2147483647), "Threads": (1, 256)}  # as advertised in answer to `uci`


def score_to_cp(s: float) -> int:
    """Expected score → centipawns through the logistic above."""
    s = min(max(s, 1e-6), 1.0 - 1e-6)
    return round(math.log(s / (1.0 - s)) / LICHESS_K)


class UciEngine:
    """Protocol state machine; ``handle(line)`` returns False on ``quit``."""

    def __init__(
        self, model_name: str, out: TextIO = sys.stdout, temperature: str = "0", seed: int = 0, threads: int = 1
    ) -> None:
        self.model_name, self.out = model_name, out
        self.options = {"Temperature": temperature, "Seed": str(seed), "Threads": str(threads), "UCI_ShowWDL": "true"}
        self._check_temperature(temperature)
        self.root = chess.STARTING_FEN
        self.board = chess.Board()
        self.pending: str | None = None  # bestmove held back by go infinite / ponder
        self._threads_set = False
        # set by the loader thread: every attribute exists before it starts
        self.model: torch.nn.Module | None = None
        self.gen: torch.Generator | None = None
        self.load_error: BaseException | None = None
        self._loader = threading.Thread(target=self._load, daemon=True)
        self._loader.start()

    # -- model ------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            import torch  # noqa: PLC0415  (heavy: imported off the protocol thread)

            from pdx_lightning.nets import load_model  # noqa: PLC0415

            with _LOAD_LOCK:  # random: models seed torch's global RNG: one load at a time per process
                self.model = load_model(self.model_name)
            self.gen = torch.Generator().manual_seed(int(self.options["Seed"]))
        except BaseException as e:  # noqa: BLE001  (reported on the protocol thread)
            self.load_error = e

    def _ready(self) -> bool:
        if self._loader.is_alive() or self.load_error is not None:
            self._loader.join()
            if self.load_error is not None:
                self.send(f"info string error: cannot load model {self.model_name!r}: {self.load_error}")
                raise SystemExit(1)
        if not self._threads_set:  # on the protocol thread, which runs the forward (OpenMP threads are per thread)
            import torch  # noqa: PLC0415

            torch.set_num_threads(int(self.options["Threads"]))
            self._threads_set = True
        return True

    # -- output -----------------------------------------------------------------------------
    def send(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def error(self, msg: str) -> None:
        self.send(f"info string error: {msg}")

    # -- commands ---------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        tokens = line.strip().split()
        if not tokens:
            return True
        cmd, args = tokens[0], tokens[1:]
        if cmd == "quit":
            return False
        method = getattr(self, f"cmd_{cmd}", None)
        if method is None:
            self.error(f"unknown command {line.strip()[:80]!r}")
            return True
        try:
            method(args)
        except SystemExit:
            raise
        except Exception as e:  # noqa: BLE001  (never die on input)
            self.error(f"{cmd}: {type(e).__name__}: {e}")
        return True

    def cmd_uci(self, args: list[str]) -> None:
        self.send(f"id name pdx_lightning ({self.model_name})")
        self.send("id author pdx_lightning")
        self.send("option name Temperature type string default 0")
        self.send("option name Seed type spin default 0 min 0 max 2147483647")
        self.send("option name Threads type spin default 1 min 1 max 256")
        self.send("option name UCI_ShowWDL type check default true")
        self.send("uciok")

    def cmd_isready(self, args: list[str]) -> None:
        self._ready()
        self.send("readyok")

    def cmd_debug(self, args: list[str]) -> None:
        pass

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self.root, self.board, self.pending = chess.STARTING_FEN, chess.Board(), None

    def cmd_d(self, args: list[str]) -> None:
        self.send(f"info string fen {self.board.fen()} moves {len(self.board.move_stack)}")

    @staticmethod
    def _check_temperature(value: str) -> None:
        if value != "adaptive":
            try:
                ok = float(value) >= 0
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"Temperature must be 'adaptive' or a number >= 0, got {value!r}")

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise ValueError("usage: setoption name <id> [value <x>]")
        k = args.index("value") if "value" in args else len(args)
        name, value = " ".join(args[1:k]), " ".join(args[k + 1 :])
        key = next((o for o in self.options if o.lower() == name.lower()), None)
        if key is None:
            raise ValueError(f"no such option {name!r}")
        if key == "Temperature":
            self._check_temperature(value)
        elif key == "UCI_ShowWDL":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"UCI_ShowWDL must be true or false, got {value!r}")
            value = value.lower()
        else:  # spin options: the advertised bounds (a huge Threads would ask torch for that many threads)
            lo, hi = SPIN_BOUNDS[key]
            if not (value.isascii() and value.isdigit()) or not lo <= int(value) <= hi:
                raise ValueError(f"{key} must be an integer in [{lo}, {hi}], got {value!r}")
        self.options[key] = value
        if key in ("Seed", "Threads"):
            self._ready()
            if key == "Seed":
                assert self.gen is not None  # _ready(): loaded
                self.gen.manual_seed(int(value))
            else:
                self._threads_set = False
                self._ready()

    def cmd_position(self, args: list[str]) -> None:
        k = args.index("moves") if "moves" in args else len(args)
        head, moves = args[:k], args[k + 1 :]
        if head == ["startpos"]:
            root = chess.STARTING_FEN
        elif head and head[0] == "fen" and len(head) > 1:
            board = chess.Board(" ".join(head[1:]))  # ValueError → error, position unchanged
            if not board.is_valid():
                raise ValueError(f"invalid position {board.fen()!r} ({board.status()!r})")
            root = board.fen()
        else:
            raise ValueError("usage: position startpos|fen <fen> [moves <m1> ...]")
        known = [m.uci() for m in self.board.move_stack]
        if root == self.root and moves[: len(known)] == known:
            board, start = self.board, len(known)  # the same game, extended: replay only the new moves
        else:
            board, start = chess.Board(root), 0
        for n, uci in enumerate(moves[start:], start + 1):
            try:
                move = chess.Move.from_uci(uci)
            except ValueError:
                move = None
            if move is None or not board.is_legal(move):
                self.root, self.board = root, board
                raise ValueError(
                    f"illegal move {uci!r} (move {n} of the position command) in {board.fen()}; "
                    f"position set to the {n - 1} moves before it"
                )
            board.push(move)
        self.root, self.board = root, board

    def _parse_go(self, args: list[str]) -> tuple[dict, list[chess.Move]]:
        limits, searchmoves, i = {}, [], 0
        while i < len(args):
            tok = args[i]
            if tok in GO_INT_KEYS and i + 1 < len(args) and args[i + 1].lstrip("-").isdigit():
                limits[tok], i = int(args[i + 1]), i + 2
            elif tok in GO_FLAGS:
                limits[tok], i = True, i + 1
            elif tok == "searchmoves":
                i += 1
                while i < len(args) and args[i] not in GO_INT_KEYS + GO_FLAGS:
                    try:
                        m = chess.Move.from_uci(args[i])
                    except ValueError:
                        m = None
                    if m is None or not self.board.is_legal(m):
                        self.error(f"searchmoves: {args[i]!r} is not legal here; ignored")
                    else:
                        searchmoves.append(m)
                    i += 1
            else:
                self.error(f"go: ignoring malformed token {tok!r}")
                i += 1
        return limits, searchmoves

    def cmd_go(self, args: list[str]) -> None:
        self._ready()
        if self.pending:  # a GUI that skipped stop: answer the previous search first
            self.send(self.pending)
            self.pending = None
        limits, searchmoves = self._parse_go(args)
        line = self._search(searchmoves)
        if limits.get("infinite") or limits.get("ponder"):
            self.pending = line
        else:
            self.send(line)

    def cmd_stop(self, args: list[str]) -> None:
        if self.pending:
            self.send(self.pending)
            self.pending = None

    cmd_ponderhit = cmd_stop

    def _search(self, searchmoves: list[chess.Move]) -> str:
        """One forward pass: sends the ``info`` line, returns the ``bestmove`` line.

        The lean path of a single position (the latency a GUI sees): one legal-move generation, the
        network called directly, the argmax over the legal logits (the softmax only when sampling)."""
        import torch  # noqa: PLC0415

        from pdx_lightning.chesscore.encoding import encode_boards  # noqa: PLC0415
        from pdx_lightning.chesscore.moves import index_to_move, legal_mask  # noqa: PLC0415
        from pdx_lightning.chesscore.policy import masked_log_softmax, tempered_log_probs, wdl_entropy  # noqa: PLC0415

        t0 = time.perf_counter()
        board = self.board
        legal = searchmoves or list(board.legal_moves)
        if not legal:
            self.send("info depth 0 score " + ("mate 0" if board.is_check() else "cp 0"))
            return "bestmove (none)"
        mask = legal_mask([board], [legal])  # (1, 4288)
        assert self.model is not None  # _ready(): loaded
        with torch.inference_mode():
            out = self.model(torch.from_numpy(encode_boards([board])))
        logits, wdl = out.policy.float(), torch.softmax(out.wdl.float(), dim=-1)
        temp = self.options["Temperature"]
        tau = wdl_entropy(wdl) if temp == "adaptive" else float(temp)
        if temp != "adaptive" and tau == 0:
            idx = int(logits.masked_fill(~mask, float("-inf")).argmax())
        else:
            logp = masked_log_softmax(logits, mask)
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="base:small, a .ckpt/.pt file, an Lc0 .pb.gz, random:tiny")
    parser.add_argument("--temperature", default="0", help="0 = argmax (default), a number, or 'adaptive'")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (UCI option Seed)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (UCI option Threads)")


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    if hasattr(stdin, "reconfigure"):  # a byte that is not UTF-8 must not kill the engine: it becomes U+FFFD
        stdin.reconfigure(errors="replace")
    try:
        engine = UciEngine(args.model, stdout, args.temperature, args.seed, args.threads)
    except ValueError as e:
        print(f"pdx uci: {e}", file=sys.stderr)
        return 2
    try:
        while True:
            line = stdin.readline()
            if not line or not engine.handle(line):  # EOF or quit
                return 0
    except SystemExit as e:
        return int(e.code or 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pdx uci", description="the network as a UCI engine")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
