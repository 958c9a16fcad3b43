"""Lightning strategy flags as a user types them into ``pdx fit`` (issue 55 item 4): each either works or is
refused in one line on stderr with exit 2, no traceback. Run through the real ``pdx`` entry
(``pdx_lightning.cli.main``, in-process: the refusals come before any training) on the tiny fit config.

``--trainer.strategy ddp_spawn`` on two CPU processes runs for real in ``test_ddp_cli.py`` (slow);
here, the pickling it needs: the module leaves a spawning process and comes back with the same state.
"""

from __future__ import annotations

import pickle

import pytest
import torch

from pdx_lightning import cli
from tiny_fit import CONF, tiny_fit_args

torch.set_num_threads(1)

# flags -> what the one line must say (Lightning's words, or pdx's for accumulate_grad_batches)
REFUSED = {
    "accumulate": (
        ["--trainer.accumulate_grad_batches", "4"],
        "--trainer.accumulate_grad_batches 4: PDXModule optimizes manually",
    ),
    "fsdp_on_cpu": (["--trainer.strategy", "fsdp"], "The strategy `fsdp` requires a GPU accelerator"),
    "gpu_without_one": (["--trainer.accelerator", "gpu"], "No supported gpu backend found"),
    "deepspeed_missing": (["--trainer.strategy", "deepspeed"], "you must have DeepSpeed installed"),
    "precision_package_missing": (["--trainer.precision", "transformer-engine"], "transformer_engine"),
    "precision_unknown": (["--trainer.precision", "17"], "trainer.precision"),
    "devices_zero": (["--trainer.devices", "0"], "`Trainer(devices='0')` value is not a valid input"),
    "devices_not_a_number": (["--trainer.devices", "abc"], "`devices` selected with `CPUAccelerator`"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_lightning_setting_it_cannot_run_is_one_line_and_exit_2(case, tmp_path, monkeypatch, capsys):
    flags, says = REFUSED[case]
    monkeypatch.chdir(tmp_path)
    if case == "gpu_without_one" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    rc = cli.main(["fit", "--config", CONF, *tiny_fit_args(1), *flags])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("pdx fit: error:")]
    assert rc == 2, err
    assert len(errors) == 1 and says in errors[0], err
    assert "Traceback" not in err and "MisconfigurationException" not in err
    assert not list(tmp_path.rglob("*.ckpt"))  # refused before any step


def test_accumulate_grad_batches_names_the_micro_batch_setting(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["fit", "--config", CONF, *tiny_fit_args(1), "--trainer.accumulate_grad_batches", "4"]) == 2
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("pdx fit: error:")]
    assert "--model.algorithm.micro_batch" in line and "whole batch" in line


def test_accumulate_grad_batches_1_is_lightnings_default_and_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["fit", "--config", CONF, *tiny_fit_args(1), "--trainer.accumulate_grad_batches", "1"]) == 0


def test_the_traceback_flag_still_shows_lightnings_own_error(tmp_path, monkeypatch):
    from pdx_lightning.runtime.lightning_cli import TrainerSettingError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(TrainerSettingError) as e:
        cli.main(["--traceback", "fit", "--config", CONF, *tiny_fit_args(1), "--trainer.strategy", "fsdp"])
    assert isinstance(e.value.__cause__, ValueError)  # Lightning's, chained


def test_help_says_what_moves_logs_and_checkpoints(capsys):
    with pytest.raises(SystemExit):
        cli.main(["fit", "--config", CONF, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--trainer.logger.init_args.save_dir DIR moves both" in text
    assert "default_root_dir applies to a run with --trainer.logger false" in text


def test_the_module_pickles_for_ddp_spawn():
    """ddp_spawn sends the module through torch's multiprocessing pickler: no local lambda, and the self-play
    sampler's generator travels as its state's bytes (torch's pickler would share the state tensor through a
    file descriptor the spawned process cannot map); it round-trips."""
    from pdx_lightning.rl.module import PDXModule
    from pdx_lightning.rl.selfplay import SelfPlayConfig

    m = PDXModule(base="random:tiny", selfplay=SelfPlayConfig(n_games=4, opening_max_moves=1, max_plies=6))
    m.dataset.gen.manual_seed(7)
    assert isinstance(m.dataset.__getstate__()["gen"], bytes)
    back = pickle.loads(pickle.dumps(m))
    assert torch.equal(back.dataset.gen.get_state(), m.dataset.gen.get_state())
    back.param_version = 5
    assert back.dataset.networks.version() == 5  # the copy's own counter
    assert back.train_dataloader().collate_fn([1]) == [1]


def test_the_quiet_callback_installs_the_filters_where_it_is_unpickled():
    """ddp_spawn's workers get the Trainer by pickle: unpickling QuietKnownNoise installs the known-noise
    filters in that process (a plain __setstate__ is never called for an object without state)."""
    import pickle
    import subprocess
    import sys

    from pdx_lightning.runtime.noise import QuietKnownNoise

    blob = pickle.dumps(QuietKnownNoise())
    probe = (
        "import pickle, sys, warnings\n"
        "cb = pickle.loads(sys.stdin.buffer.read())\n"
        "quiet = any(f[0] == 'ignore' and f[1] is not None and 'eval mode' in f[1].pattern for f in warnings.filters)\n"
        "print(type(cb).__name__, quiet)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], input=blob, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert r.stdout.decode().split() == ["QuietKnownNoise", "True"]
