"""Random starting boards for the differential fuzzer (``fuzz_core.py``), biased toward what breaks chess cores.

:func:`random_root` draws a kind, builds a board of it and retries until python-chess's ``Board.status()``
accepts it (what the pools' boundary accepts); each kind aims at rules a core gets wrong:

* ``start`` / ``suite``: the standard start, or a position of the committed suites (tactics, mates, puzzles);
* ``en_passant``: a pawn that has just double-pushed beside enemy pawns, often with the capturer pinned
  (diagonally, or on the rank, where taking both pawns would expose the king);
* ``castling``: kings and rooks at home, rights at random, enemy pieces eyeing the king's path;
* ``promotion``: pawns on both 7th ranks, pieces on the back ranks to capture while promoting;
* ``pins_checks``: sliders on the lines of the kings, often checking (double checks included);
* ``endgame``: kings and up to three men (insufficient material, stalemates, mates);
* ``queens``: up to 15 queens against a walled-in king (up to 236 legal moves, above the 218 of any
  reachable position);
* ``random``: anything from 2 to 32 men.

Clocks are drawn too: mostly a fresh halfmove clock, often one near the 50- and 75-move limits, sometimes
huge; fullmove numbers up to ``boundary.MAX_FULLMOVE``. With ``stack_p`` the board also gets a few random
legal moves on its stack (what ``set_board`` replays).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import chess

from pdx_lightning.chesscore.boundary import MAX_FULLMOVE, MAX_HALFMOVE

DATA = Path(__file__).resolve().parents[2] / "data"
SUITES = (
    "tactics.csv",
    "mates_in_1.csv",
    "mates_in_2.csv",
    "mates_in_3.csv",
    "mates_in_4.csv",
    "mates_in_5.csv",
    "lichess/puzzles_random_2k.csv",
    "lichess/puzzles_lila_seed.csv",
)
KINDS = ("start", "suite", "en_passant", "castling", "promotion", "pins_checks", "endgame", "queens", "random")
WEIGHTS = (6, 10, 14, 10, 10, 10, 14, 4, 10)
PIECES = (chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN)
# 15 queens against a walled-in king, hill-climbed for legal moves (227, 236, 230: above the 218 of any
# reachable position)
MOBILE = (
    "knQQ1Q2/nn5Q/Q5Q1/1Q6/4QQ2/Q1Q4Q/Q4Q2/3Q2K1 w - - 0 1",
    "kn2Q1Q1/nnQQ4/Q4Q1Q/2Q4Q/4Q3/1Q4Q1/3Q4/Q4QK1 w - - 0 1",
    "knQ1Q1Q1/nnQ5/Q6Q/2Q5/Q6Q/3Q1Q2/QQ4Q1/4Q1K1 w - - 0 1",
)


def suite_fens() -> list[str]:
    """Every FEN of the committed suites."""
    fens = []
    for name in SUITES:
        with open(DATA / name, newline="") as f:
            fens += [row["FEN"] for row in csv.DictReader(f)]
    return fens


def _free(rng: random.Random, b: chess.Board, squares=chess.SQUARES) -> int | None:
    squares = list(squares)
    for _ in range(8):  # mostly a random square is free: no scan
        s = rng.choice(squares)
        if not b.occupied >> s & 1:
            return s
    empty = [s for s in squares if not b.occupied >> s & 1]
    return rng.choice(empty) if empty else None


def _put(rng, b, piece_type, color, squares=chess.SQUARES) -> int | None:
    if piece_type == chess.PAWN:
        squares = [s for s in squares if 8 <= s < 56]
    s = _free(rng, b, squares)
    if s is not None:
        b.set_piece_at(s, chess.Piece(piece_type, color))
    return s


def _men(rng, b, color, n, types=(chess.PAWN, chess.PAWN) + PIECES) -> None:
    for _ in range(n):
        _put(rng, b, rng.choice(types), color)


def _kings(rng, b, white=chess.SQUARES, black=chess.SQUARES) -> None:
    _put(rng, b, chess.KING, chess.WHITE, white)
    _put(rng, b, chess.KING, chess.BLACK, black)


def _en_passant(rng, b: chess.Board) -> None:
    us = b.turn = rng.random() < 0.5
    rank = 4 if us == chess.WHITE else 3  # where the enemy pawn landed
    f = rng.randrange(8)
    pushed, ep = chess.square(f, rank), chess.square(f, rank + (1 if us == chess.WHITE else -1))
    b.set_piece_at(pushed, chess.Piece(chess.PAWN, not us))
    for df in (-1, 1):
        if 0 <= f + df < 8 and rng.random() < 0.8:
            b.set_piece_at(chess.square(f + df, rank), chess.Piece(chess.PAWN, us))
    if rng.random() < 0.4:  # the rank pin: king and a rook/queen on the rank
        ends = [chess.square(x, rank) for x in (0, 7) if b.piece_at(chess.square(x, rank)) is None]
        if len(ends) == 2:
            rng.shuffle(ends)
            b.set_piece_at(ends[0], chess.Piece(chess.KING, us))
            b.set_piece_at(ends[1], chess.Piece(rng.choice((chess.ROOK, chess.QUEEN)), not us))
    if b.king(us) is None:
        _put(rng, b, chess.KING, us)
    _put(rng, b, chess.KING, not us)
    _men(rng, b, us, rng.randrange(5))
    _men(rng, b, not us, rng.randrange(5))
    b.ep_square = ep


def _castling(rng, b: chess.Board) -> None:
    for color, rank in ((chess.WHITE, 0), (chess.BLACK, 7)):
        b.set_piece_at(chess.square(4, rank), chess.Piece(chess.KING, color))
        for f in (0, 7):
            if rng.random() < 0.85:
                b.set_piece_at(chess.square(f, rank), chess.Piece(chess.ROOK, color))
        for f in (1, 2, 3, 5, 6):
            if rng.random() < 0.2:
                b.set_piece_at(chess.square(f, rank), chess.Piece(rng.choice(PIECES[:2]), color))
    for color in (chess.WHITE, chess.BLACK):
        _men(rng, b, color, rng.randrange(6), types=PIECES + (chess.PAWN,))
    b.turn = rng.random() < 0.5
    b.castling_rights = b.clean_castling_rights() & rng.choice((chess.BB_ALL, chess.BB_ALL, rng.getrandbits(64)))


def _promotion(rng, b: chess.Board) -> None:
    _kings(rng, b)
    for color, rank in ((chess.WHITE, 6), (chess.BLACK, 1)):
        for f in rng.sample(range(8), rng.randint(1, 4)):
            if b.piece_at(chess.square(f, rank)) is None:
                b.set_piece_at(chess.square(f, rank), chess.Piece(chess.PAWN, color))
    for color, rank in ((chess.BLACK, 7), (chess.WHITE, 0)):
        for _ in range(rng.randrange(4)):
            _put(rng, b, rng.choice(PIECES), color, chess.SquareSet(chess.BB_RANKS[rank]))
    b.turn = rng.random() < 0.5


def _pins_checks(rng, b: chess.Board) -> None:
    _kings(rng, b)
    b.turn = us = rng.random() < 0.5
    king = b.king(us)
    for _ in range(rng.randint(1, 3)):  # sliders on the king's lines, some behind a man
        line = [
            s
            for s in chess.SquareSet(
                chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0] | chess.BB_DIAG_ATTACKS[king][0]
            )
            if b.piece_at(s) is None
        ]
        if not line:
            break
        s = rng.choice(line)
        diagonal = chess.square_file(s) != chess.square_file(king) and chess.square_rank(s) != chess.square_rank(king)
        b.set_piece_at(s, chess.Piece(rng.choice((chess.BISHOP if diagonal else chess.ROOK, chess.QUEEN)), not us))
        between = list(chess.SquareSet(chess.between(king, s)))
        if between and rng.random() < 0.6:
            b.set_piece_at(rng.choice(between), chess.Piece(rng.choice(PIECES + (chess.PAWN,)), us))
    if rng.random() < 0.3:
        _put(rng, b, chess.KNIGHT, not us, chess.SquareSet(chess.BB_KNIGHT_ATTACKS[king]))
    _men(rng, b, us, rng.randrange(6))
    _men(rng, b, not us, rng.randrange(6))


def _endgame(rng, b: chess.Board) -> None:
    _kings(rng, b)
    for _ in range(rng.randint(0, 3)):
        _put(
            rng,
            b,
            rng.choice((chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.BISHOP, chess.ROOK, chess.QUEEN)),
            rng.random() < 0.5,
        )
    b.turn = rng.random() < 0.5


def _queens(rng, b: chess.Board) -> None:
    if rng.random() < 0.3:  # a hill-climbed board, maybe colours flipped
        m = chess.Board(rng.choice(MOBILE))
        b.set_board_fen((m.mirror() if rng.random() < 0.5 else m).board_fen())
        b.turn = b.king(chess.WHITE) is not None and b.pieces(chess.QUEEN, chess.WHITE) != chess.SquareSet()
        return
    b.turn = us = rng.random() < 0.5
    corner, wall = rng.choice(((chess.A8, (chess.A7, chess.B7, chess.B8)), (chess.H1, (chess.G1, chess.G2, chess.H2))))
    b.set_piece_at(corner, chess.Piece(chess.KING, not us))
    for s in wall:
        b.set_piece_at(s, chess.Piece(chess.KNIGHT, not us))
    _put(rng, b, chess.KING, us)
    for _ in range(rng.randint(8, 15)):
        _put(rng, b, chess.QUEEN, us)


def _random(rng, b: chess.Board) -> None:
    _kings(rng, b)
    for color in (chess.WHITE, chess.BLACK):
        _men(rng, b, color, rng.randint(0, 15))
    b.turn = rng.random() < 0.5


_BUILD = {
    "en_passant": _en_passant,
    "castling": _castling,
    "promotion": _promotion,
    "pins_checks": _pins_checks,
    "endgame": _endgame,
    "queens": _queens,
    "random": _random,
}


def _clocks(rng, b: chess.Board) -> None:
    u = rng.random()
    b.halfmove_clock = (
        0
        if u < 0.5
        else rng.randint(1, 99)
        if u < 0.65
        else rng.randint(94, 101)
        if u < 0.8
        else rng.randint(140, 151)
        if u < 0.95
        else rng.choice((rng.randint(152, 10**4), MAX_HALFMOVE))
    )
    u = rng.random()
    b.fullmove_number = (
        rng.randint(1, 80)
        if u < 0.9
        else rng.randint(81, 10**4)
        if u < 0.97
        else rng.choice((rng.randint(10**4, MAX_FULLMOVE), MAX_FULLMOVE))
    )


def random_root(rng: random.Random, suite: list[str], stack_p: float = 0.2) -> tuple[str, chess.Board]:
    """A random valid board (its kind, the board), maybe with a few legal moves on its stack."""
    kind = rng.choices(KINDS, WEIGHTS)[0]
    for _ in range(500):
        if kind == "start":
            b = chess.Board()
        elif kind == "suite":
            b = chess.Board(rng.choice(suite))
        else:
            b = chess.Board(None)
            _BUILD[kind](rng, b)
            _clocks(rng, b)
        if b.is_valid():
            break
    else:
        kind, b = "start", chess.Board()
    if rng.random() < stack_p:
        for _ in range(rng.randint(1, 8)):
            legal = list(b.legal_moves)
            if not legal:
                break
            b.push(rng.choice(legal))
    return kind, b
