"""τ(s) of the play distribution, chosen in one place (chesscore.policy.play_temperature)."""

from __future__ import annotations

import math

import pytest
import torch

from pdx_lightning.chesscore.policy import play_temperature


def test_adaptive_is_the_wdl_entropy_in_nats_and_a_number_is_fixed_by_hand():
    wdl = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    assert play_temperature(wdl, "adaptive").tolist() == pytest.approx([math.log(2), 0.0, math.log(3)], abs=1e-6)
    fixed = play_temperature(wdl, 0.7)
    assert fixed.dtype == torch.float32 and fixed.tolist() == pytest.approx([0.7] * 3)
    assert torch.equal(play_temperature(wdl, 1.0), torch.ones(3))  # the fixed arm's τ ≡ 1, exactly
