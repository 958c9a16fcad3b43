"""Property-based fuzzing of every parser that reads outside input (hypothesis).

Each test feeds generated inputs — well-formed ones, mutated well-formed ones and
garbage (random text, control characters, NUL bytes, invalid UTF-8, truncation) — and
asserts: no crash (only the parser's named error escapes), no hang (a per-input alarm
raises :class:`Hang`, which no ``except Exception`` can swallow), and that what is
accepted is sound (legal moves, valid boards, finite weights).

Each body is two tests: ``test_fuzz_<reader>`` in the default run with a fifth of the inputs (a
second or two) and ``test_fuzz_<reader>_full`` (marked slow, ``pytest -m slow``) with the full count
(2,000 inputs for the cheap parsers, fewer where an input means building a network). ``PDX_FUZZ_SCALE``
multiplies every count for a soak, e.g. ``PDX_FUZZ_SCALE=10 pytest -m slow tests/runtime/test_fuzz.py``.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import gzip
import io
import os
import random
import shutil
import signal
import tempfile
from collections.abc import Sequence
from pathlib import Path

import chess
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx_lightning.datagen.opening_suite import OpeningFormatError, load_openings
from pdx_lightning.evaluation.suite import PuzzleFormatError, load_suite
from pdx_lightning.nets import ModelLoadError, load_model
from pdx_lightning.rl.selfplay import read_opening_lines

torch.set_num_threads(1)
SCALE = float(os.environ.get("PDX_FUZZ_SCALE", "1"))


QUICK = 0.2  # the default run's share of each count: the same readers fuzzed, in a fifth of the time


def examples(n: float) -> int:
    return max(10, int(n * SCALE))


FUZZ = settings(
    max_examples=examples(2000),
    deadline=None,
    derandomize=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
)
HANG_SECONDS = 20.0  # per input; generous for a loaded CI machine, finite for a real hang


def fuzz_tests(n: int, body, *strategies):
    """``body`` under ``@given(*strategies)`` twice: the default run's test with ``QUICK * n`` inputs and
    the slow run's with ``n`` (two wrappers of one body, so both check exactly the same properties)."""
    quick = settings(FUZZ, max_examples=examples(QUICK * n))(given(*strategies)(body))
    full = settings(FUZZ, max_examples=examples(n))(given(*strategies)(body))
    return quick, pytest.mark.slow(full)


class Hang(BaseException):
    """An input took longer than HANG_SECONDS (BaseException: `except Exception` cannot hide it)."""


@contextlib.contextmanager
def time_limit(seconds: float = HANG_SECONDS):
    def alarm(signum, frame):
        raise Hang(f"no result within {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_TMP = tempfile.mkdtemp(prefix="pdx_fuzz_")
atexit.register(shutil.rmtree, _TMP, True)


def _write(data: bytes, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(suffix=suffix, dir=_TMP)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return Path(name)


# ---------------------------------------------------------------- building blocks


@st.composite
def games(draw, max_plies: int = 60) -> chess.Board:
    """A board reached by random legal moves from the start (its move stack is the history)."""
    rng = draw(st.randoms(use_true_random=False))
    b = chess.Board()
    for _ in range(draw(st.integers(0, max_plies))):
        moves = list(b.legal_moves)
        if not moves:
            break
        b.push(rng.choice(moves))
    return b


SQUARE = st.sampled_from(chess.SQUARE_NAMES)
UCI_LIKE = st.builds(lambda a, b, p: a + b + p, SQUARE, SQUARE, st.sampled_from(["", "", "", "q", "n", "x", "Q"]))
JUNK_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=24)
CSV_SPECIAL = st.text(alphabet=',"\n\r|; \t\x00\ufeff#0123456789abcdefgh/KQRBNPkqrbnpw-', max_size=24)
TOKEN = st.one_of(
    UCI_LIKE,
    JUNK_TEXT,
    CSV_SPECIAL,
    st.integers(-(10**12), 10**12).map(str),
    st.sampled_from(["", "0000", "nan", "inf", "-1", "1e400", "e1h1", "e1g1", "a7a8q", "a7a8"]),
)


def _mutate(data: bytes, rng: random.Random, n_ops: int) -> bytes:
    b = bytearray(data)
    for _ in range(n_ops):
        op = rng.randrange(4)
        if not b:
            b += bytes([rng.randrange(256)])
        elif op == 0:  # flip a byte
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1:  # truncate
            del b[rng.randrange(len(b)) :]
        elif op == 2:  # insert bytes
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        else:  # delete a span
            i = rng.randrange(len(b))
            del b[i : i + rng.randrange(1, 16)]
    return bytes(b)


def _finalize(text: str, draw) -> bytes:
    """Encode, sometimes with a BOM, CRLF line ends, a NUL, invalid UTF-8 or byte mutations."""
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    k = draw(st.integers(0, 9))
    if k == 0:
        data += b"\xff\xfe\x80bad"
    elif k == 1:
        data = data.replace(b",", b"\x00,", 1)
    elif k == 2:
        data = _mutate(data, draw(st.randoms(use_true_random=False)), draw(st.integers(1, 6)))
    return data


# ---------------------------------------------------------------- puzzle CSV loader

LICHESS_HEADER = [
    "PuzzleId",
    "FEN",
    "Moves",
    "Rating",
    "RatingDeviation",
    "Popularity",
    "NbPlays",
    "Themes",
    "GameUrl",
    "OpeningTags",
]
RUOSS_HEADER = ["PuzzleId", "Rating", "PGN", "Solution", "FEN", "Moves"]


def _san_line(board: chess.Board) -> str:
    return chess.Board().variation_san(board.move_stack) if board.move_stack else ""


def _sans(board: chess.Board) -> list[str]:
    replay, out = chess.Board(), []
    for m in board.move_stack:
        out.append(replay.san(m))
        replay.push(m)
    return out


@st.composite
def puzzle_rows(draw, fmt: str) -> list[str]:
    """A plausible row for ``fmt`` (from a random game and a random continuation), maybe corrupted."""
    b = draw(games(max_plies=30))
    rng = draw(st.randoms(use_true_random=False))
    start = b.copy()
    line = []
    for _ in range(draw(st.integers(0, 7))):
        moves = list(start.legal_moves)
        if not moves:
            break
        line.append(rng.choice(moves))
        start.push(line[-1])
    ucis = " ".join(m.uci() for m in line)
    rating = draw(st.one_of(st.integers(-100, 4000).map(str), TOKEN))
    pid = draw(st.one_of(st.text("abcdefXYZ0123", min_size=1, max_size=6), TOKEN))
    if fmt == "ruoss":
        pgn = _san_line(b) if draw(st.booleans()) else " ".join(_sans(b))
        row = [pid, rating, pgn, "", b.fen() if draw(st.booleans()) else "", ucis]
    else:
        row = [
            pid,
            b.fen(),
            ucis,
            rating,
            "80",
            "90",
            "100",
            draw(st.sampled_from(["mate mateIn1", "", "fork"])),
            "https://lichess.org/x",
            "",
        ]
        if fmt == "generated":
            alt_groups = [" ".join(draw(st.lists(UCI_LIKE, max_size=3))) for _ in range((len(line) + 1) // 2)]
            row += [
                " | ".join(alt_groups) if draw(st.booleans()) else draw(TOKEN),
                draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(str), TOKEN)),
            ]
        elif fmt == "headerless9":
            row = row[:9]
    for _ in range(draw(st.integers(0, 2))):  # corrupt fields
        row[draw(st.integers(0, len(row) - 1))] = draw(TOKEN)
    if draw(st.integers(0, 7)) == 0:  # wrong column count
        row = row[:-1] if draw(st.booleans()) else row + [draw(TOKEN)]
    return row


@st.composite
def puzzle_files(draw) -> tuple[bytes, str]:
    fmt = draw(st.sampled_from(["lichess", "ruoss", "generated", "headerless10", "headerless9", "garbage", "binary"]))
    if fmt == "binary":
        return draw(st.binary(max_size=400)), draw(st.sampled_from([".csv", ".csv.zst"]))
    buf = io.StringIO()
    w = csv.writer(buf, quoting=draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC])))
    if fmt == "garbage":
        for _ in range(draw(st.integers(0, 5))):
            w.writerow(draw(st.lists(TOKEN, max_size=12)))
    else:
        header = {
            "lichess": LICHESS_HEADER,
            "ruoss": RUOSS_HEADER,
            "generated": LICHESS_HEADER + ["AltMoves", "Difficulty"],
        }.get(fmt)
        if header:
            w.writerow(header if draw(st.integers(0, 9)) else draw(st.permutations(header)))
        for _ in range(draw(st.integers(0, 5))):
            w.writerow(draw(puzzle_rows("lichess" if fmt.startswith("headerless10") else fmt)))
    data = _finalize(buf.getvalue(), draw)
    if draw(st.integers(0, 9)) == 0:
        import zstandard

        return zstandard.ZstdCompressor().compress(data), ".csv.zst"
    return data, ".csv"


def _fuzz_puzzle_csv_loader(file, skip_bad):
    data, suffix = file
    path = _write(data, suffix)
    try:
        with time_limit():
            suite = load_suite(path, skip_bad=skip_bad)
    except PuzzleFormatError as e:
        assert str(path) in str(e)  # file:line named
        return
    finally:
        path.unlink()
    for p in suite.puzzles:  # what is accepted is sound
        assert p.board.is_valid()
        b = p.board.copy()
        for k, m in enumerate(p.line):
            assert b.is_legal(m)
            if k % 2 == 0:
                assert m in p.accepted[k // 2] and all(b.is_legal(a) for a in p.accepted[k // 2])
            b.push(m)
    assert suite.n_bad == 0 or skip_bad


test_fuzz_puzzle_csv_loader, test_fuzz_puzzle_csv_loader_full = fuzz_tests(
    1000, _fuzz_puzzle_csv_loader, puzzle_files(), st.booleans()
)


# ---------------------------------------------------------------- opening readers (selfplay + arena)


@st.composite
def opening_files(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        b = draw(games(max_plies=24))
        ucis = [m.uci() for m in b.move_stack]
        kind = draw(st.integers(0, 6))
        if kind == 0:
            text = " ".join(ucis)
        elif kind == 1:  # EPD with its line, maybe inconsistent
            ops = {"id": draw(st.text("abc-0123", max_size=8)), "c0": " ".join(ucis)}
            if draw(st.booleans()):
                ops["ce"] = draw(
                    st.one_of(st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False, width=32))
                )
            if draw(st.booleans()) and ucis:
                ops["c0"] = " ".join(ucis[:-1])
            try:
                text = b.epd(**ops)
            except ValueError:
                text = b.epd()
        elif kind == 2:
            text = b.fen()
        elif kind == 3:
            text = " ".join(ucis + [draw(TOKEN)])
        elif kind == 4:
            text = b.epd() + " " + draw(CSV_SPECIAL)
        elif kind == 5:
            text = draw(st.sampled_from(["# comment", "", "   ", '"', 'id "x";', "c0;", "8/8/8/8/8/8/8/8 w - -"]))
        else:
            text = draw(JUNK_TEXT)
        lines.append(text)
    return _finalize("\n".join(lines) + ("\n" if draw(st.booleans()) else ""), draw)


def _fuzz_opening_readers(data):
    path = _write(data, ".epd")
    try:
        with time_limit():
            try:
                for line in read_opening_lines(str(path)):
                    b = chess.Board()
                    for uci in line:
                        b.push_uci(uci)  # every accepted line replays from the start
                    assert not b.is_game_over()
            except OpeningFormatError as e:
                assert str(path) in str(e)
            try:
                for o in load_openings(path):
                    assert o.board.is_valid() or o.board.status() == chess.STATUS_VALID
                    replay = chess.Board() if o.line else o.board.copy(stack=False)
                    for uci in o.line:
                        replay.push_uci(uci)
                    assert replay.epd() == o.board.epd()
            except OpeningFormatError as e:
                assert str(path) in str(e)
    finally:
        path.unlink()


test_fuzz_opening_readers, test_fuzz_opening_readers_full = fuzz_tests(1000, _fuzz_opening_readers, opening_files())


# ---------------------------------------------------------------- Lc0 .pb.gz reader


class Blob(bytes):
    """Bytes with a short repr (hypothesis prints the fixture of a failing example)."""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes>"


@pytest.fixture(scope="module")
def lc0_bytes() -> bytes:
    from pdx_lightning.nets import lc0
    from pdx_lightning.nets.chessformer import Chessformer, ModelConfig

    cfg = lc0.lc0_style(
        ModelConfig.from_name(
            "tiny",
            embed_dim=8,
            n_layers=1,
            n_heads=2,
            ffn_dim=8,
            smolgen_compress=2,
            smolgen_hidden=8,
            smolgen_gen=2,
            policy_dim=8,
            value_dim=2,
        ),
        "pe_map",
    )
    torch.manual_seed(0)
    path = Path(_TMP) / "micro.pb.gz"
    lc0.export_lc0(Chessformer(cfg), path, encoding="float16")
    load_model(str(path))  # the unmutated file loads
    return Blob(path.read_bytes())


def _check_loads_or_named(data: bytes, suffix: str = ".pb.gz") -> None:
    path = _write(data, suffix)
    try:
        with time_limit():
            model = load_model(str(path))
        for name, t in model.state_dict().items():
            assert torch.isfinite(t).all(), name
    except ModelLoadError as e:  # Lc0FormatError is a ModelLoadError
        assert str(path) in str(e)
    finally:
        path.unlink()


def _fuzz_lc0_reader_garbage(data):
    _check_loads_or_named(data)


test_fuzz_lc0_reader_garbage, test_fuzz_lc0_reader_garbage_full = fuzz_tests(
    2000, _fuzz_lc0_reader_garbage, st.one_of(st.binary(max_size=600), st.binary(max_size=600).map(gzip.compress))
)


def _fuzz_lc0_reader_byte_mutations(lc0_bytes, rng, n_ops, inside_gzip):
    if inside_gzip:
        data = gzip.compress(_mutate(gzip.decompress(lc0_bytes), rng, n_ops))
    else:
        data = _mutate(lc0_bytes, rng, n_ops)
    _check_loads_or_named(data)


test_fuzz_lc0_reader_byte_mutations, test_fuzz_lc0_reader_byte_mutations_full = fuzz_tests(
    300, _fuzz_lc0_reader_byte_mutations, st.randoms(use_true_random=False), st.integers(1, 6), st.booleans()
)


def _layers(msg, prefix=""):
    """(path, message) of every sub-message of a protobuf message, depth first."""
    out = []
    for field, value in msg.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        repeated = not hasattr(value, "ListFields")  # a repeated field is a container, not a message
        items = list(enumerate(value)) if repeated else [(None, value)]
        for i, sub in items:
            path = f"{prefix}{field.name}" + (f".{i}" if i is not None else "")
            out.append((path, sub))
            out += _layers(sub, path + ".")
    return out


def _fuzz_lc0_reader_structure_mutations(lc0_bytes, rng, n_ops):
    """Schema-aware mutations: dropped fields and layers, wrong enums, sizes, encodings, ranges."""
    from pdx_lightning.nets.lc0 import schema as P

    net = P.Net.FromString(gzip.decompress(lc0_bytes))
    for _ in range(n_ops):
        subs = _layers(net)
        _path, sub = rng.choice(subs)
        scalars = [
            f
            for f in sub.DESCRIPTOR.fields
            if (f.type != f.TYPE_MESSAGE and not isinstance(getattr(sub, f.name), Sequence)) or f.type == f.TYPE_BYTES
        ]
        op = rng.randrange(6)
        if op == 0:  # drop a field or sub-message
            fields = [f.name for f, _ in sub.ListFields()]
            if fields:
                sub.ClearField(rng.choice(fields))
        elif op == 1 and scalars:  # a scalar to a random value
            f = rng.choice(scalars)
            if f.type == f.TYPE_FLOAT:
                setattr(sub, f.name, rng.choice([0.0, -1.0, 1e30, float("nan"), float("inf"), rng.uniform(-5, 5)]))
            elif f.type == f.TYPE_BYTES:
                v = getattr(sub, f.name)
                setattr(sub, f.name, v[: rng.randrange(len(v) + 1)] if v and rng.random() < 0.7 else b"\x00\x01\x02")
            elif f.type == f.TYPE_STRING:
                setattr(sub, f.name, rng.choice(["", "x", "\u2603"]))
            else:
                setattr(sub, f.name, rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 134, 255, 2**32 - 1]))
        elif op == 2 and "encoder" in [f.name for f, _ in net.weights.ListFields()]:  # drop / duplicate a layer
            enc = net.weights.encoder
            if rng.random() < 0.5 and len(enc) > 0:
                del enc[rng.randrange(len(enc))]
            else:
                enc.add().CopyFrom(enc[0]) if len(enc) else None
        elif op == 3:
            net.weights.headcount = rng.choice([0, 1, 3, 7, 2**31 - 1])
        elif op == 4:
            net.format.network_format.network = rng.choice([0, 1, 2, 5, 6, 7, 134, 99])
        else:
            net.magic = rng.choice([0, 0x1C0, 12345])
    _check_loads_or_named(gzip.compress(net.SerializeToString()))


test_fuzz_lc0_reader_structure_mutations, test_fuzz_lc0_reader_structure_mutations_full = fuzz_tests(
    300, _fuzz_lc0_reader_structure_mutations, st.randoms(use_true_random=False), st.integers(1, 4)
)


# ---------------------------------------------------------------- UCI command loop


class RandomNet(torch.nn.Module):
    """Random policy and WDL logits: the command loop is under test, not the network (the
    subprocess test below runs the real one)."""

    def __init__(self):
        super().__init__()
        self.dummy = torch.nn.Parameter(torch.zeros(1))
        self.gen = torch.Generator().manual_seed(0)

    def forward(self, x):
        from pdx_lightning.nets import NetOutput

        b = x.shape[0]
        return NetOutput(torch.randn(b, 4288, generator=self.gen) * 3, torch.randn(b, 3, generator=self.gen))


@pytest.fixture(scope="module")
def uci_model():
    return RandomNet()


def _engine(model, out):
    from pdx_lightning.engines import uci

    class Engine(uci.UciEngine):
        def _load(self):  # the shared, already loaded network: many engines per second
            self.model = model
            self.gen = torch.Generator().manual_seed(0)

    return Engine("random:tiny", out)


@st.composite
def uci_commands(draw) -> str:
    b = draw(games(max_plies=30))
    moves = [m.uci() for m in b.move_stack]
    kind = draw(st.integers(0, 14))
    if kind == 0:
        return draw(st.sampled_from(["uci", "isready", "ucinewgame", "stop", "ponderhit", "d", "debug on", ""]))
    if kind in (1, 2):
        head = "startpos" if draw(st.booleans()) else "fen " + (b.root().fen() if draw(st.booleans()) else b.fen())
        extra = draw(st.lists(TOKEN, max_size=2)) if draw(st.integers(0, 3)) == 0 else []
        return f"position {head} moves {' '.join(moves + extra)}" if moves or extra else f"position {head}"
    if kind == 3:
        return "position fen " + " ".join(draw(st.lists(TOKEN, max_size=7)))
    if kind in (4, 5, 6):
        toks = draw(
            st.lists(
                st.one_of(
                    st.sampled_from(
                        [
                            "wtime",
                            "btime",
                            "winc",
                            "binc",
                            "movestogo",
                            "depth",
                            "nodes",
                            "mate",
                            "movetime",
                            "infinite",
                            "ponder",
                            "searchmoves",
                        ]
                    ),
                    st.integers(-(10**6), 10**9).map(str),
                    UCI_LIKE,
                    TOKEN,
                ),
                max_size=8,
            )
        )
        return "go " + " ".join(toks)
    if kind == 7:
        name = draw(st.sampled_from(["Temperature", "Seed", "Threads", "UCI_ShowWDL", "temperature", "Hash", ""]))
        value = draw(
            st.one_of(
                st.sampled_from(
                    [
                        "0",
                        "1",
                        "adaptive",
                        "0.5",
                        "-1",
                        "true",
                        "false",
                        "nan",
                        "inf",
                        "1e309",
                        "256",
                        "257",
                        "2147483647",
                        "2147483648",
                        "99999999999",
                    ]
                ),
                TOKEN,
            )
        )
        return f"setoption name {name} value {value}" if draw(st.integers(0, 5)) else f"setoption name {name}"
    if kind == 8:
        return draw(JUNK_TEXT)
    if kind == 9:
        return " ".join(draw(st.lists(TOKEN, max_size=6)))
    if kind == 10:
        return "position " + draw(st.sampled_from(["", "startpos moves", "fen", "moves e2e4", "startpos moves 0000"]))
    if kind == 11:
        return "x" * draw(st.integers(1000, 5000))
    return "go" + draw(st.sampled_from(["", " infinite", " ponder", " depth 1", " searchmoves e2e4 d2d4"]))


UCI_REPLIES = ("id ", "option ", "uciok", "readyok", "info ", "bestmove ")


def _fuzz_uci_command_loop(uci_model, commands):
    """Every go gets exactly one bestmove, in order (a searched go answers from its thread, a held one at
    stop): legal in the go's position when it has one, 0000 after a refused position."""
    out = io.StringIO()
    engine = _engine(uci_model, out)
    gos = []  # (the position, refused?) of each go, in order
    try:
        with time_limit():
            for cmd in commands:
                before = out.tell()
                if cmd.split()[:1] == ["go"]:
                    gos.append((engine.board.copy(), engine.refused))
                assert engine.handle(cmd) is True  # never dies on input
                assert engine.board.is_valid() or engine.board.status() == chess.STATUS_VALID
                replies = out.getvalue()[before:].splitlines()
                assert all(r.startswith(UCI_REPLIES) for r in replies), replies
            assert engine.handle("quit") is False
            assert not engine.searching
    finally:
        torch.set_num_threads(1)
    best = [r.split()[1] for r in out.getvalue().splitlines() if r.startswith("bestmove ")]
    assert len(best) == len(gos), (commands, best)
    for (board, refused), move in zip(gos, best, strict=True):
        if refused:  # after a refused position: no move
            assert move == "0000", (commands, move)
        elif any(board.generate_legal_moves()):
            assert board.is_legal(chess.Move.from_uci(move)), (commands, move, board.fen())


test_fuzz_uci_command_loop, test_fuzz_uci_command_loop_full = fuzz_tests(
    500, _fuzz_uci_command_loop, st.lists(uci_commands(), min_size=1, max_size=8)
)


def _fuzz_uci_stdin_loop_terminates(uci_model, lines, with_quit):
    """The whole loop (``pdx uci``'s ``run``): returns 0 at ``quit`` or end of input, whatever came before."""
    import argparse

    from pdx_lightning.engines import uci

    text = "\n".join(lines) + ("\nquit\n" if with_quit else "")
    out = io.StringIO()
    args = argparse.Namespace(model="random:tiny", temperature="0", seed=0, threads=1)
    orig = uci.UciEngine._load
    uci.UciEngine._load = lambda self: (
        setattr(self, "model", uci_model),
        setattr(self, "gen", torch.Generator().manual_seed(0)),
    )
    try:
        with time_limit():
            assert uci.run(args, io.StringIO(text), out) == 0
    finally:
        uci.UciEngine._load = orig
        torch.set_num_threads(1)
    assert all(r.startswith(UCI_REPLIES) for r in out.getvalue().splitlines())


test_fuzz_uci_stdin_loop_terminates, test_fuzz_uci_stdin_loop_terminates_full = fuzz_tests(
    300, _fuzz_uci_stdin_loop_terminates, st.lists(st.one_of(uci_commands(), JUNK_TEXT), max_size=10), st.booleans()
)


def test_uci_process_survives_bytes_that_are_not_utf8():
    """`pdx uci` as a process: invalid UTF-8, NUL and an overlong line on stdin, then a normal game."""
    import subprocess
    import sys

    data = (
        b"uci\n\xff\xfe\x80garbage\nsetoption name Seed value \xe9\n\x00\x00\n" + b"x" * 100_000 + b"\n"
        b"isready\nposition startpos moves e2e4\ngo depth 1\nquit\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "pdx_lightning.engines.uci", "--model", "random:tiny"],
        input=data,
        capture_output=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr[-2000:]
    assert "uciok" in out and "readyok" in out and "bestmove " in out
    move = out.split("bestmove ")[1].split()[0]
    b = chess.Board()
    b.push_uci("e2e4")
    assert b.is_legal(chess.Move.from_uci(move))
