"""chess.policy is the one home of the policy math; rl.objectives re-exports it unchanged."""
from __future__ import annotations

import math

import pytest
import torch

from pdx_lightning.chesscore import policy, rules
from pdx_lightning.chesscore.moves import POLICY_SIZE
from pdx_lightning.rl import objectives

SHARED = ("TAU_MIN", "masked_log_softmax", "entropy", "forward_kl", "reverse_kl", "tempered_log_probs",
          "wdl_entropy", "score", "flip_wdl")


def test_rl_objectives_re_exports_the_same_objects():
    for name in SHARED:
        assert getattr(objectives, name) is getattr(policy, name), name
    for name in ("WIN", "DRAW", "LOSS", "RESULT_NONE"):
        assert getattr(objectives, name) == getattr(rules, name)
    assert (rules.WIN, rules.DRAW, rules.LOSS, rules.RESULT_NONE) == (0, 1, 2, -1)
    assert objectives.ObjectiveInputError is policy.PolicyInputError


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
