"""A protocol fuzzer for ``pdx uci``: real engine processes driven as a GUI or a bot would, and worse.

Each session is one engine process fed a random mix of real commands (positions from random games,
``go`` with every limit, ``searchmoves``, options, ``stop`` / ``ponderhit`` …) and adversarial ones
(invalid positions, illegal moves, huge numbers, random bytes that are not UTF-8, lines of megabytes),
ended by ``quit``, the end of input or SIGTERM at a random moment, often while the model still loads.
The invariants checked for every session:

* exit code 0 and nothing at all on stderr (no traceback, no "terminate called …");
* the process ends within ``HANG_S`` of its last input (never a hang);
* every processed ``go`` gets exactly one ``bestmove``, in order; a ``bestmove 0000`` follows an
  ``info string`` saying why; a ``go`` after a valid position answers a legal move (of ``searchmoves``
  when given), after a refused one ``0000``; each ``isready`` gets its ``readyok``;
* every line written starts as a UCI answer; the peak resident memory stays under ``MEM_LIMIT``.

Engine lines are derived from the bytes sent with the same reader the engine uses (``io.TextIOWrapper``,
lines ending at ``\n``, invalid UTF-8 replaced), so what counts as a ``go`` or a ``quit`` is exactly what the
engine sees.

Sessions run in processes forked from a *zygote*: one interpreter that has already imported torch and
the package (as ``pdx uci`` has when its loader thread starts, the case that used to abort at exit),
so a session costs a fork and a model load, not an interpreter start. ``fresh=True`` starts a new
interpreter per session instead. Run directly for a large run::

    python tests/engines/uci_fuzz.py --sessions 300 --seed 1
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import chess

from pdx_lightning.engines.uci import MAX_HALFMOVE_CLOCK, MAX_LINE_CHARS

MODEL = "base:small"
HANG_S = 120.0  # a session's end to the process's exit: model load plus the queued forward passes, slow CPU
MEM_LIMIT = 1536 << 20  # bytes of peak RSS (torch + base:small ≈ 0.4 GB; an unbounded 50 MB line took 2.6 GB)
REPLIES = ("id ", "option ", "uciok", "readyok", "info ", "bestmove ")
REPO = Path(__file__).resolve().parents[2]

# The zygote: imports what `pdx uci` has imported when its model loader starts, then forks one
# engine per request; the child gets the request's pipes as fds 0, 1, 2 and runs the real entry point.
ZYGOTE = r"""
import json, os, signal, socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
import torch, pdx_lightning.nets  # noqa: F401
from pdx_lightning import cli
if sys.argv[2] == "cli":
    cli.build_parser()  # every tool module imported, as `pdx` does before it runs a command
from pdx_lightning.engines import uci
sock.sendall(b'{"ready": true}\n')
while True:
    msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
    if not msg:
        break
    argv = json.loads(msg)
    pid = os.fork()
    if pid == 0:
        sock.close()
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        import faulthandler
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # a hang's report: every thread's stack
        # ends as the real process does: through interpreter finalisation, unless the engine ends first
        sys.exit(cli.main(["uci", *argv]) if sys.argv[2] == "cli" else uci.main(argv))
    for fd in fds:
        os.close(fd)
    sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    sock.sendall(json.dumps({"rc": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
"""


def engine_env() -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1", "PYTHONUTF8": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


class Proc:
    """One engine process: ``stdin`` (binary, unbuffered), ``stdout`` / ``stderr`` fds, ``wait``."""

    def __init__(self, pid: int, stdin: int, stdout: int, stderr: int, wait) -> None:
        self.pid, self.stdout, self.stderr, self._wait = pid, stdout, stderr, wait
        self.stdin = os.fdopen(stdin, "wb", buffering=0)

    def wait(self, timeout: float) -> int | None:
        return self._wait(timeout)


class Zygote:
    def __init__(self, entry: str = "uci") -> None:
        self.sock, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE, str(theirs.fileno()), entry],
            pass_fds=[theirs.fileno()],
            env=engine_env(),
            stdin=subprocess.DEVNULL,
            cwd=REPO,
        )
        theirs.close()
        self.buf = b""
        assert self._recv(600).get("ready"), "zygote did not start"

    def _recv(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError(f"zygote exited ({self.proc.poll()})")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def spawn(self, argv: list[str]) -> Proc:
        (in_r, in_w), (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe(), os.pipe()
        socket.send_fds(self.sock, [json.dumps(argv).encode()], [in_r, out_w, err_w])
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        pid = self._recv(60)["pid"]

        def wait(timeout: float) -> int | None:
            try:
                return self._recv(timeout)["rc"]
            except TimeoutError:
                return None

        return Proc(pid, in_w, out_r, err_r, wait)

    def close(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def spawn_fresh(argv: list[str]) -> Proc:
    p = subprocess.Popen(
        [sys.executable, "-m", "pdx_lightning.engines.uci", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=engine_env(),
        cwd=REPO,
    )
    assert p.stdin and p.stdout and p.stderr
    fds = [os.dup(f.fileno()) for f in (p.stdin, p.stdout, p.stderr)]
    for f in (p.stdin, p.stdout, p.stderr):
        f.close()

    def wait(timeout: float) -> int | None:
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    return Proc(p.pid, *fds, wait)


# ---------------------------------------------------------------- the command generator

UNKNOWN = "?"  # expectation for a go whose position the fuzzer does not know (after junk)
NULL = "0000"


@dataclass
class Item:
    data: bytes  # what is written (one or more engine lines)
    board: chess.Board | None = None  # a valid position command: the position it sets
    refused: bool = False  # a position command the engine must refuse
    searchmoves: list[str] | None = None  # a go's legal searchmoves


def random_game(rng: random.Random, max_plies: int = 60) -> chess.Board:
    board = chess.Board()
    for _ in range(rng.randint(0, max_plies)):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    return board


def position_line(board: chess.Board, rng: random.Random) -> str:
    """A position command for ``board``: from startpos, or from the FEN of one of its earlier positions."""
    moves = [m.uci() for m in board.move_stack]
    k = rng.randint(0, len(moves)) if rng.random() < 0.4 else 0
    if k:
        root = board.copy()
        for _ in range(len(moves) - k):
            root.pop()
        head = f"fen {root.fen()}"
    else:
        head = "startpos"
    rest = moves[k:] if k else moves
    return f"position {head}" + (" moves " + " ".join(rest) if rest else "")


def invalid_position(rng: random.Random) -> str:
    board = random_game(rng, 40)
    kind = rng.randrange(6)
    if kind == 0:  # the side not to move in check
        b = chess.Board("4k3/8/8/8/8/8/4R3/4K3 b - - 0 1")  # in check, to move: flipped below
        for _ in range(60):
            g = random_game(rng, 40)
            if g.is_check():
                b = g
                break
        b.turn = not b.turn
        return f"position fen {b.fen()}"
    if kind == 1:  # a halfmove clock no game has
        clock = rng.choice([MAX_HALFMOVE_CLOCK + 1, 10**12, int("9" * 400)])
        fields = board.fen().split()
        fields[4] = str(clock)
        return "position fen " + " ".join(fields)
    if kind == 2:  # an illegal move after legal ones
        line = position_line(board, rng)
        bad = rng.choice(["e1e8", "a1a1", "zz", "0000", "e2e5", "h7h8q", "\u00e9"])
        return line + ("" if " moves " in line else " moves") + f" {bad}"
    if kind == 3:  # not a FEN
        return "position fen " + rng.choice(["not/a/fen w - - 0 1", "8/8/8/8/8/8/8/8 w - - 0 1", "x", ""])
    if kind == 4:  # too many kings, pawns on the back rank
        return "position fen " + rng.choice(
            ["4k3/8/8/8/8/8/8/4KK2 w - - 0 1", "P3k3/8/8/8/8/8/8/4K3 w - - 0 1", "4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1"]
        )
    return "position startpos moves " + rng.choice(["e2e4 e2e4", "e2e4 e7e5 e7e5", "g1f3 g8f6 g1f3", "e7e5"])


def junk_bytes(rng: random.Random, n: int) -> bytes:
    alphabet = [b"go", b"position", b"stop", b"quit", b" ", b"\t", b"\r", b"\x00", b"\xff", b"\xc3", b"e2e4", b"\xe9"]
    parts = []
    for _ in range(n):
        parts.append(rng.choice(alphabet) if rng.random() < 0.3 else bytes([rng.randrange(256)]))
    return b"".join(parts).replace(b"\n", b" ")


def go_line(board: chess.Board | None, rng: random.Random) -> tuple[str, list[str] | None]:
    toks: list[str] = []
    for _ in range(rng.randint(0, 4)):
        toks.append(rng.choice(["wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime"]))
        toks.append(rng.choice(["1", "100", "60000", "-5", "0", "9" * 30, "x", "1e9"]))
    if rng.random() < 0.15:
        toks.append(rng.choice(["infinite", "ponder"]))
    searchmoves = None
    if board is not None and rng.random() < 0.25:
        legal = [m.uci() for m in board.legal_moves]
        if legal:
            searchmoves = rng.sample(legal, rng.randint(1, min(4, len(legal))))
            toks += ["searchmoves", *searchmoves, *rng.sample(["e1e8", "zz", "a1a1"], rng.randint(0, 2))]
    elif rng.random() < 0.1:
        toks += ["searchmoves", "e9e4", "zz"]
    if searchmoves is None and rng.random() < 0.1:
        rng.shuffle(toks)
    return "go " + " ".join(toks), searchmoves


def session_items(rng: random.Random, n: int, long_lines: int, huge: bool = False) -> list[Item]:
    items: list[Item] = []
    board: chess.Board | None = chess.Board()
    if rng.random() < 0.8:
        items.append(Item(b"uci\n"))
    for _ in range(n):
        r = rng.random()
        if r < 0.22:
            b = random_game(rng)
            items.append(Item((position_line(b, rng) + "\n").encode(), board=b))
            board = b
        elif r < 0.3:
            items.append(Item((invalid_position(rng) + "\n").encode(), refused=True))
        elif r < 0.55:
            line, sm = go_line(board, rng)
            items.append(Item((line + "\n").encode(), searchmoves=sm))
        elif r < 0.62:
            items.append(Item(rng.choice([b"isready\n", b"stop\n", b"ponderhit\n", b"d\n", b"debug on\n", b"uci\n"])))
        elif r < 0.66:
            items.append(Item(b"ucinewgame\n", board=chess.Board()))
            board = chess.Board()
        elif r < 0.76:
            name, value = rng.choice(
                [
                    ("Temperature", "1"),
                    ("Temperature", "adaptive"),
                    ("Temperature", "0"),
                    ("Temperature", "nan"),
                    ("Temperature", "-1"),
                    ("Seed", "7"),
                    ("Seed", "1e23"),
                    ("Seed", "-1"),
                    ("Threads", "0"),
                    ("Threads", "-3"),
                    ("Threads", "20000"),
                    ("Threads", "100000"),
                    ("Threads", "9" * 50),
                    ("UCI_ShowWDL", "false"),
                    ("UCI_ShowWDL", "maybe"),
                    ("Hash", "16"),
                ]
            )
            items.append(Item(f"setoption name {name} value {value}\n".encode()))
        elif r < 0.97:
            items.append(Item(junk_bytes(rng, rng.randint(1, 60)) + rng.choice([b"\n", b"\r\n"])))
        else:
            items.append(Item(b"go " + b"x" * rng.randint(1, 200) + b"\n"))
    for _ in range(long_lines):
        size = rng.choice([MAX_LINE_CHARS + 1, 2 * MAX_LINE_CHARS, 5 * MAX_LINE_CHARS] + [50 << 20] * huge)
        head = rng.choice([b"go searchmoves ", b"position startpos moves ", b"xyzzy ", b"setoption name Seed value "])
        tail = b"e2e4 " if head.startswith((b"go", b"position")) else b"z"
        data = head + tail * ((size - len(head)) // len(tail) + 1) + b"\n"
        items.insert(rng.randint(0, len(items)), Item(data, refused=head.startswith(b"position")))
    return items


def engine_lines(data: bytes) -> list[str]:
    """``data`` split into lines exactly as the engine's stdin reader splits them: Python's ``sys.stdin``
    on POSIX ends lines at ``\n`` only (``newline="\n"``; a ``\r`` stays inside, as whitespace)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline="\n").readlines()


# ---------------------------------------------------------------- the session


@dataclass
class Expect:
    gos: list[tuple[str, chess.Board | None, list[str] | None]] = field(default_factory=list)
    isready: int = 0
    lines: int = 0  # engine lines processed


def expectations(items: list[Item]) -> tuple[Expect, int]:
    """What the engine owes for ``items``, and how many items it reads (it stops at a quit)."""
    exp = Expect()
    state: tuple[str, chess.Board | None] = ("board", chess.Board())
    for n, item in enumerate(items):
        for line in engine_lines(item.data):
            exp.lines += 1
            overlong = len(line) > MAX_LINE_CHARS
            first = (line.split(maxsplit=1) or [""])[0]
            if overlong:
                if first == "go":
                    exp.gos.append((NULL, None, None))
                elif first == "position":
                    state = ("refused", None)
                continue
            if first == "quit":
                return exp, n + 1
            if first == "isready":
                exp.isready += 1
            elif first == "go":
                kind, board = state
                if kind == "refused":
                    exp.gos.append((NULL, None, None))
                elif board is None or item.board is not None or item.refused:
                    exp.gos.append((UNKNOWN, None, None))
                else:
                    exp.gos.append(("board", board, item.searchmoves))
            elif first in ("position", "ucinewgame"):
                if item.refused:
                    state = ("refused", None)
                elif item.board is not None:
                    state = ("board", item.board)
                else:  # junk that happens to be a position command
                    state = ("board", None)
    return exp, len(items)


@dataclass
class Result:
    violations: list[str]
    commands: int
    gos: int
    end: str
    early: bool  # ended before the engine had answered isready or go (the model still loading)
    peak_rss: int
    seconds: float
    transcript: str = ""  # what was sent and answered (kept for a session with violations)


def _drain(fd: int, sink: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return
        if not chunk:
            return
        sink.append(chunk)


def _hang_report(proc: Proc, err: list[bytes]) -> str:
    """What a hung engine is doing: each thread's state, kernel wait channel and system call (``/proc``),
    then its Python stacks (a zygote's child dumps them with faulthandler at SIGUSR1)."""
    threads = []
    try:
        for tid in sorted(os.listdir(f"/proc/{proc.pid}/task"), key=int):
            base = f"/proc/{proc.pid}/task/{tid}"
            state = Path(f"{base}/stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = Path(f"{base}/wchan").read_text().strip()
            syscall = Path(f"{base}/syscall").read_text().split()[0]
            threads.append(f"{tid} {Path(f'{base}/comm').read_text().strip()} {state} wchan={wchan} syscall={syscall}")
    except OSError as e:
        threads.append(f"/proc: {e}")
    before = len(b"".join(err))
    try:
        os.kill(proc.pid, signal.SIGUSR1)
    except ProcessLookupError:
        pass
    time.sleep(2.0)
    stacks = b"".join(err)[before:].decode("utf-8", "replace")
    return "threads: " + "; ".join(threads) + "\n" + stacks[-6000:]


def _peak_rss(pid: int, done: threading.Event, peak: list[int]) -> None:
    while not done.is_set():
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        for line in text.splitlines():
            if line.startswith("VmHWM:"):
                peak[0] = max(peak[0], int(line.split()[1]) * 1024)
        done.wait(0.02)


def run_session(proc: Proc, items: list[Item], end: str, rng: random.Random) -> Result:
    """Feed ``items`` to ``proc`` and end the session by ``end`` (quit / eof / sigterm); check the invariants."""
    t0 = time.monotonic()
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=_drain, args=(fd, sink), daemon=True)
        for fd, sink in ((proc.stdout, out), (proc.stderr, err))
    ]
    done, peak = threading.Event(), [0]
    sampler = threading.Thread(target=_peak_rss, args=(proc.pid, done, peak), daemon=True)
    for t in (*readers, sampler):
        t.start()
    violations: list[str] = []
    cut = len(items) if end == "quit" else rng.randint(0, len(items))
    if end == "sigterm" or rng.random() < 0.3:  # often cut early: the model is still loading
        cut = min(cut, rng.randint(0, 3))
    sent = items[:cut] + ([Item(b"quit\n"), Item(b"go\nisready\n")] if end == "quit" else [])
    exp, _ = expectations(sent)

    def write() -> None:
        try:
            for item in sent:
                proc.stdin.write(item.data)
                if rng.random() < 0.2:
                    time.sleep(rng.random() * 0.02)
            if end == "sigterm":
                # from the moment the engine answers (the handlers are installed), mostly during the load
                deadline = time.monotonic() + HANG_S
                while b"uciok" not in b"".join(out) and time.monotonic() < deadline:
                    time.sleep(0.005)
                time.sleep(rng.random() * 0.3)
                os.kill(proc.pid, signal.SIGTERM)
            elif rng.random() < 0.5:
                time.sleep(rng.random() * 0.05)  # else at once: the end of input while the model loads
        except (BrokenPipeError, ProcessLookupError):
            pass  # the engine has quit already
        finally:
            if end != "sigterm":
                proc.stdin.close()

    if end == "sigterm":
        sent.insert(0, Item(b"uci\n"))
        exp, _ = expectations(sent)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(HANG_S)
    rc = proc.wait(HANG_S)
    if rc is None:
        violations.append(f"hang: no exit within {HANG_S} s after the session's end ({end}): {_hang_report(proc, err)}")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(60)
    if writer.is_alive():
        violations.append("hang: the engine stopped reading its input")
    proc.stdin.close()
    done.set()
    for t in readers:
        t.join(30)
    for fd in (proc.stdout, proc.stderr):
        os.close(fd)
    stdout, stderr = b"".join(out).decode("utf-8", "replace"), b"".join(err)
    if rc not in (0, None):
        violations.append(f"exit code {rc} ({end})")
    if stderr:
        violations.append(f"stderr: {stderr[-600:]!r}")
    if peak[0] > MEM_LIMIT:
        violations.append(f"peak RSS {peak[0] >> 20} MiB > {MEM_LIMIT >> 20} MiB")
    lines = stdout.split("\n")  # not splitlines(): it also splits at \x1c, \x85, \u2028 …
    if lines[-1] == "":
        lines.pop()
    bad = [ln for ln in lines if not ln.startswith(REPLIES)]
    if bad:
        violations.append(f"not a UCI answer: {bad[:3]!r}")
    best = [
        (i, ln.split()[1] if len(ln.split()) > 1 else "") for i, ln in enumerate(lines) if ln.startswith("bestmove ")
    ]
    complete = end != "sigterm"  # a killed session may stop anywhere
    if complete and len(best) != len(exp.gos):
        violations.append(f"{len(exp.gos)} go, {len(best)} bestmove")
    if len(best) > len(exp.gos):
        violations.append(f"more bestmoves ({len(best)}) than go ({len(exp.gos)})")
    if complete and lines.count("readyok") != exp.isready:
        violations.append(f"{exp.isready} isready, {lines.count('readyok')} readyok")
    prev = -1
    for (i, move), (kind, board, searchmoves) in zip(best, exp.gos):
        if move == NULL and not any(ln.startswith("info string") for ln in lines[prev + 1 : i]):
            violations.append(f"bestmove 0000 without an info string (line {i})")
        prev = i
        if kind == NULL and move != NULL:
            violations.append(f"bestmove {move} after a refused position (line {i})")
        elif kind == "board" and board is not None:
            legal = {m.uci() for m in board.legal_moves}
            allowed = set(searchmoves) if searchmoves else legal
            if (move == NULL) != (not legal) or (legal and move not in allowed):
                violations.append(f"bestmove {move} in {board.fen()} (allowed {sorted(allowed)[:6]}…) (line {i})")
        elif move != NULL:
            try:
                chess.Move.from_uci(move)
            except ValueError:
                violations.append(f"bestmove {move!r} is not a move (line {i})")
    early = not any(ln == "readyok" or ln.startswith(("bestmove", "info depth")) for ln in lines)
    transcript = ""
    if violations:
        sent_text = "".join(repr(it.data[:300])[2:-1] + "\n" for it in sent)
        transcript = f"--- sent ({end}) ---\n{sent_text}--- answered ---\n{stdout[-20000:]}"
    return Result(violations, exp.lines, len(exp.gos), end, early, peak[0], time.monotonic() - t0, transcript)


@dataclass
class Stats:
    sessions: int = 0
    commands: int = 0
    gos: int = 0
    ends: dict[str, int] = field(default_factory=dict)
    early: int = 0
    long_lines: int = 0
    peak_rss: int = 0
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        ends = ", ".join(f"{k} {v}" for k, v in sorted(self.ends.items()))
        return (
            f"{self.sessions} sessions ({ends}; {self.early} ended before the model answered), "
            f"{self.commands} commands ({self.gos} go, {self.long_lines} lines over {MAX_LINE_CHARS} chars), "
            f"peak RSS {self.peak_rss >> 20} MiB, {len(self.violations)} violations, {self.seconds:.0f} s"
        )


def fuzz(
    sessions: int,
    seed: int = 0,
    fresh: int = 0,
    entry: str = "uci",
    max_commands: int = 30,
    long_line_rate: float = 0.1,
    verbose: bool = False,
    huge: bool = False,
    dump: Path | None = None,
    zygote: Zygote | None = None,
) -> Stats:
    """``sessions`` sessions forked from a zygote (``entry``: ``uci`` = ``python -m …uci``'s main, ``cli`` =
    ``pdx uci``), then ``fresh`` sessions in fresh interpreters."""
    rng = random.Random(seed)
    stats = Stats()
    t0 = time.monotonic()
    own = zygote is None and sessions > 0
    if own:
        zygote = Zygote(entry)
    try:
        for s in range(sessions + fresh):
            end = rng.choice(["quit", "eof", "sigterm"])
            long_lines = int(rng.random() < long_line_rate)
            items = session_items(rng, rng.randint(0, max_commands), long_lines, huge)
            argv = ["--model", MODEL] + rng.choice(
                [[], ["--temperature", "1", "--seed", "3"], ["--temperature", "adaptive"]]
            )
            proc = zygote.spawn(argv) if zygote is not None and s < sessions else spawn_fresh(argv)
            res = run_session(proc, items, end, rng)
            stats.sessions += 1
            stats.commands += res.commands
            stats.gos += res.gos
            stats.ends[end] = stats.ends.get(end, 0) + 1
            stats.early += res.early
            stats.long_lines += long_lines
            stats.peak_rss = max(stats.peak_rss, res.peak_rss)
            stats.violations += [f"session {s} (seed {seed}): {v}" for v in res.violations]
            if res.violations and dump is not None:
                dump.mkdir(parents=True, exist_ok=True)
                (dump / f"session_{seed}_{s}.txt").write_text(res.transcript)
            if verbose:
                print(
                    f"session {s}: {res.end} {res.commands} commands {res.seconds:.1f} s {res.violations}", flush=True
                )
    finally:
        if own and zygote is not None:
            zygote.close()
    stats.seconds = time.monotonic() - t0
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--fresh", type=int, default=0, help="sessions in fresh interpreters, after the zygote's")
    ap.add_argument("--entry", choices=["uci", "cli"], default="uci")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-commands", type=int, default=30)
    ap.add_argument("--long-line-rate", type=float, default=0.1)
    ap.add_argument("--huge", action="store_true", help="also 50 MB lines")
    ap.add_argument("--dump", type=Path, help="write the transcript of each session with a violation here")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    stats = fuzz(a.sessions, a.seed, a.fresh, a.entry, a.max_commands, a.long_line_rate, a.verbose, a.huge, a.dump)
    print(stats.line())
    for v in stats.violations[:50]:
        print(v)
    return 1 if stats.violations else 0


if __name__ == "__main__":
    sys.exit(main())
