"""The algorithm's settings in one place (rl.settings.PDXSettings): validated once, old keys pointed to or migrated."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import (
    MOVED_KEYS,
    MovedSettingError,
    PDXSettings,
    SettingsError,
    check_fit_args,
    migrate_hparams,
)

NUMERIC = {
    "beta": (0.0, [math.nan, math.inf, -1.0, -1e-9]),
    "c_v": (0.0, [math.nan, -math.inf, -0.5]),
    "value_anchor": (0.0, [math.nan, math.inf, -0.1]),
    "ema_decay": (1.0, [math.nan, 2.0, -0.01, 1.0000001]),
    "grad_clip_norm": (1e-3, [math.nan, math.inf, 0.0, -1.0]),
    "micro_batch": (1, [0, -3, 2.5, True]),
}


@pytest.mark.parametrize("key", sorted(NUMERIC))
def test_each_numeric_setting_is_refused_out_of_range_in_one_line_naming_its_key(key):
    good, bad = NUMERIC[key]
    assert getattr(PDXSettings(**{key: good}), key) == good  # the boundary itself is allowed
    for value in bad:
        with pytest.raises(SettingsError) as e:
            PDXSettings(**{key: value})
        msg = str(e.value)
        assert f"model.algorithm.{key}" in msg and "\n" not in msg and repr(value) in msg


@pytest.mark.parametrize(
    ("key", "value"),
    [("exploration", "backward"), ("temperature", "hot"), ("temperature_wdl_source", "base"), ("cap_result", "win")],
)
def test_each_choice_is_refused_outside_its_values(key, value):
    with pytest.raises(SettingsError, match=f"model.algorithm.{key}: must be one of"):
        PDXSettings(**{key: value})


def test_the_games_config_keeps_only_the_games():
    names = {f.name for f in fields(SelfPlayConfig)}
    assert not names & {f.name for f in fields(PDXSettings)}  # no setting in two places
    assert {
        "n_games",
        "seed",
        "opening_max_moves",
        "restart",
        "max_plies",
        "claim_draws",
        "backend",
        "workers",
    } <= names


def test_tau_from_online_only_for_the_adaptive_arm_with_the_online_source():
    assert PDXSettings(temperature_wdl_source="online").tau_from_online
    assert not PDXSettings(temperature="fixed", temperature_wdl_source="online").tau_from_online
    assert not PDXSettings().tau_from_online


def test_migrate_hparams_moves_every_old_key_and_keeps_todays_equal():
    old = {
        "base": "base:small",
        "exploration": "reverse_kl",
        "beta": 0.03,
        "c_v": 0.5,
        "ema_decay": 0.99,
        "value_anchor": 0.1,
        "grad_clip_norm": 1.0,
        "lr_backbone": 1e-4,
        "selfplay": {
            "n_games": 8,
            "seed": 3,
            "temperature": "fixed",
            "temperature_wdl_source": "online",
            "cap_result": "bootstrap",
            "reuse_successor_eval": True,
            "micro_batch": 4,
        },
    }
    new = migrate_hparams(old)
    assert new == {
        "base": "base:small",
        "lr_backbone": 1e-4,
        "selfplay": {"n_games": 8, "seed": 3},
        "algorithm": {
            "exploration": "reverse_kl",
            "beta": 0.03,
            "c_v": 0.5,
            "ema_decay": 0.99,
            "value_anchor": 0.1,
            "grad_clip_norm": 1.0,
            "temperature": "fixed",
            "temperature_wdl_source": "online",
            "cap_result": "bootstrap",
            "reuse_successor_eval": True,
            "micro_batch": 4,
        },
    }
    PDXSettings(**new["algorithm"])  # a valid settings block
    assert migrate_hparams(new) == new
    assert len(MOVED_KEYS) == len(new["algorithm"])  # every moved key is in the table


def test_old_keys_on_the_command_line_or_in_a_config_get_a_one_line_pointer(tmp_path):
    with pytest.raises(MovedSettingError, match=r"--model.beta is now --model.algorithm.beta"):
        check_fit_args(["fit", "--model.beta", "0.1"])
    with pytest.raises(MovedSettingError, match=r"--model.selfplay.micro_batch is now --model.algorithm.micro_batch"):
        check_fit_args(["fit", "--model.selfplay.micro_batch=4"])
    cfg = tmp_path / "old.yaml"
    cfg.write_text("model:\n  exploration: none\n  selfplay:\n    temperature: fixed\n    n_games: 4\n")
    with pytest.raises(MovedSettingError) as e:
        check_fit_args(["fit", "--config", str(cfg)])
    assert str(e.value).startswith(f"{cfg}: model.exploration is now model.algorithm.exploration")
    assert "(and 1 more)" in str(e.value)
    new = tmp_path / "new.yaml"
    new.write_text("model:\n  algorithm: {exploration: none}\n  selfplay: {n_games: 4}\n")
    check_fit_args(["fit", "--config", str(new), "--model.algorithm.beta", "0", "--model.selfplay.n_games", "4"])


def test_pdx_fit_with_an_old_key_exits_2_with_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "pdx_lightning.cli", "fit", "--model.exploration", "none"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--model.algorithm.exploration" in lines[0], proc.stderr


def test_every_shipped_fit_config_uses_todays_keys():
    conf = Path(__file__).resolve().parents[2] / "conf" / "fit"
    for path in sorted(conf.glob("*.yaml")):
        check_fit_args(["fit", "--config", str(path)])
