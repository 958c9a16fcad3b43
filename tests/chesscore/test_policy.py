"""chesscore.policy is the one home of the policy math: rl.objectives uses it without re-exporting it,
and the package root's ``forward_kl`` & co. are these objects."""

from __future__ import annotations

import math

import pytest
import torch

import pdx_lightning
from pdx_lightning.chesscore import policy, rules
from pdx_lightning.chesscore.moves import POLICY_SIZE
from pdx_lightning.rl import objectives

SHARED = (
    "TAU_MIN",
    "masked_log_softmax",
    "entropy",
    "forward_kl",
    "reverse_kl",
    "tempered_log_probs",
    "wdl_entropy",
    "score",
    "flip_wdl",
)


def test_policy_math_has_one_home():
    for name in SHARED:
        assert name not in objectives.__all__, name
        assert getattr(pdx_lightning, name) is getattr(policy, name), name
    for name in ("WIN", "DRAW", "LOSS", "RESULT_NONE"):
        assert name not in objectives.__all__, name
    assert (rules.WIN, rules.DRAW, rules.LOSS, rules.RESULT_NONE) == (0, 1, 2, -1)
    assert objectives.ObjectiveInputError is policy.PolicyInputError
    assert pdx_lightning.pdx_loss is objectives.pdx_loss


def test_policy_math_on_a_hand_example():
    mask = torch.zeros(1, POLICY_SIZE, dtype=torch.bool)
    mask[0, :2] = True
    logits = torch.zeros(1, POLICY_SIZE)
    logits[0, 0] = math.log(3.0)  # π = (3/4, 1/4)
    log_p = policy.masked_log_softmax(logits, mask)
    assert log_p[0, :2].exp().tolist() == pytest.approx([0.75, 0.25]) and log_p[0, 2] == float("-inf")
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert policy.entropy(log_p, mask).item() == pytest.approx(h)
    mu = policy.tempered_log_probs(log_p, mask, 0.5).exp()[0, :2]  # μ ∝ π² = (9, 1)/10
    assert mu.tolist() == pytest.approx([0.9, 0.1])
    assert policy.tempered_log_probs(log_p, mask, 0.0).exp()[0, :2].tolist() == [1.0, 0.0]
    wdl = torch.tensor([[0.5, 0.3, 0.2]])
    assert policy.score(wdl).item() == pytest.approx(0.65)
    assert torch.equal(policy.flip_wdl(wdl), wdl[:, [2, 1, 0]])
    with pytest.raises(objectives.ObjectiveInputError, match="no legal move"):
        policy.masked_log_softmax(logits, torch.zeros_like(mask))


# ---- the compact legal layout (issue 28) ----------------------------------------------------------------


def test_gather_legal_and_legal_valid_by_hand():
    from pdx_lightning.chesscore.policy import gather_legal, legal_valid

    values = torch.arange(12.0).reshape(2, 6)
    legal = torch.tensor([[1, 4, 1], [0, 2, 5]])  # row 0: 2 legal moves, padded with its first
    valid = legal_valid(legal, torch.tensor([2, 3]))
    assert valid.tolist() == [[True, True, False], [True, True, True]]
    assert gather_legal(values, legal, valid).tolist() == [[1.0, 4.0, float("-inf")], [6.0, 8.0, 11.0]]


def test_sample_legal_inverts_the_cdf_by_hand():
    """μ = (0.5, 0.25, 0.25, padding): u·1 < 0.5 → column 0, [0.5, 0.75) → 1, [0.75, 1) → 2; the padding
    (zero mass) is never drawn, not even at u → 1 where rounding could reach the CDF's end."""
    from pdx_lightning.chesscore.policy import sample_legal

    log_mu = torch.log(torch.tensor([[0.5, 0.25, 0.25, 0.0]])).expand(6, 4)
    u = torch.tensor([0.0, 0.4999, 0.5, 0.7499, 0.75, 1.0 - 2**-24])
    assert sample_legal(log_mu, u).tolist() == [0, 0, 1, 1, 2, 2]
    # u = 1 exactly (outside [0, 1), the worst rounding case): the last column with mass, not the padding
    assert sample_legal(log_mu[:1], torch.tensor([1.0])).tolist() == [2]
    # a zero-mass column inside the row is skipped too
    assert sample_legal(
        torch.log(torch.tensor([[0.5, 0.0, 0.5]])).expand(3, 3), torch.tensor([0.49, 0.5, 0.99])
    ).tolist() == [0, 2, 2]


def test_sample_legal_draws_mu_chi_square():
    from scipy.stats import chisquare

    from pdx_lightning.chesscore.policy import sample_legal

    g = torch.Generator().manual_seed(0)
    mu = torch.tensor([0.05, 0.15, 0.3, 0.5])
    n = 40_000
    cols = sample_legal(mu.log().expand(n, 4), torch.rand(n, generator=g))
    counts = torch.bincount(cols, minlength=4).double()
    expected = mu.double() / mu.double().sum() * n
    assert chisquare(counts.numpy(), expected.numpy()).pvalue > 1e-3
