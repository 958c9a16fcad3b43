"""Configs and checkpoints of ``pdx fit|pretrain`` checked before any work, each refusal one line, exit 2:

* a YAML "billion laughs" (342 bytes of nested anchors), a 50 MB config, a binary config: refused by
  the config bounds (``safeio.read_config_text``) before Lightning is imported, in bounded memory;
* a value of the wrong type: one line naming the key, the expected type and the value, not the usage;
* a checkpoint with bytes zeroed inside an intact zip: refused naming the file and the record;
* a resume whose settings differ from the checkpoint's: one line naming the setting.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch

from hostile_files import run_pdx
from pdx_lightning.files.safeio import FileLimitError, check_yaml_text, read_config_text

BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{c}: &{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")),
    ]
)


def _pdx(argv: list[str]) -> tuple[int, list[str]]:
    """``pdx`` in this process: exit status and stderr lines."""
    from pdx_lightning import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = cli.main(argv)
        except SystemExit as e:
            rc = int(e.code or 0)
    return rc, err.getvalue().strip().splitlines()


def test_the_billion_laughs_is_refused_in_one_line_before_lightning_is_loaded(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB + "\n")
    assert bomb.stat().st_size == 342
    start = time.monotonic()
    rc, peak, err = run_pdx(["fit", "--config", str(bomb)])
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, err[-2000:]
    assert lines[0].startswith("pdx fit: error: ") and "bomb.yaml" in lines[0] and "PDX_MAX_CONFIG_NODES=" in lines[0]
    assert peak < 200 and time.monotonic() - start < 60, peak  # ~30 MB: torch and Lightning never loaded


def test_oversized_and_binary_configs_are_refused_by_size_and_content(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:  # 50 MB: refused by its size before a byte is read (sparse here)
        f.write(b"model:\n  base: ")
        f.truncate(50 << 20)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(bytes(range(256)) * 8)
    for path, phrase in ((big, "a config of 50.0 MiB"), (binary, "not a text YAML config")):
        rc, lines = _pdx(["fit", "--config", str(path)])
        assert rc == 2 and len(lines) == 1 and phrase in lines[0] and str(path) in lines[0], lines


def test_yaml_bounds(tmp_path, monkeypatch):
    check_yaml_text("a: &x [1, 2]\nb: *x\nc: {d: *x}\n", "ok.yaml")  # anchors within the bound pass
    with pytest.raises(FileLimitError, match="expands to more than"):
        check_yaml_text(BOMB, "bomb.yaml")
    with pytest.raises(FileLimitError, match="contains it or is undefined"):
        check_yaml_text("a: &x [1, *x]\n", "cycle.yaml")
    with pytest.raises(FileLimitError, match="nested deeper than"):
        check_yaml_text("[" * 1000 + "]" * 1000, "deep.yaml")
    with pytest.raises(FileLimitError, match=r"broken.yaml: not valid YAML at line 3, column 1"):
        check_yaml_text("a: 1\nb: [\n", "broken.yaml")
    check_yaml_text("a: [\n", "value", syntax=False)  # plain text where YAML is optional
    shipped = Path(__file__).resolve().parents[2] / "conf"
    for path in shipped.rglob("*.yaml"):  # every shipped config passes, far from the bounds
        read_config_text(path)
    monkeypatch.setenv("PDX_MAX_CONFIG_NODES", "5")
    with pytest.raises(FileLimitError, match="PDX_MAX_CONFIG_NODES=10"):
        check_yaml_text("a: [1, 2, 3, 4, 5]\n", "small.yaml")


@pytest.fixture(scope="module")
def lightning_loaded():
    pytest.importorskip("lightning")
    import pdx_lightning.rl.module  # noqa: F401  (the import the fit command makes; once per module)


def test_type_errors_are_one_line_naming_key_type_and_value(lightning_loaded, tmp_path):
    cases = [
        (["fit", "--model.algorithm.beta", "abc"], "model.algorithm.beta: expected float, got abc"),
        (
            ["fit", "--model.algorithm.grad_clip_norm", "x"],
            "model.algorithm.grad_clip_norm: expected float or null, got x",
        ),
        (["fit", "--model.selfplay.n_games", "1e12x"], "model.selfplay.n_games: expected int, got 1e12x"),
        (["fit", "--trainer.max_steps", "abc"], "trainer.max_steps: expected int, got abc"),
        (["pretrain", "--model.lr", "-1"], "--model.lr: must be a finite number > 0, got -1.0"),
    ]
    _one_line_each(cases)


def test_a_callback_argument_out_of_range_is_one_line_naming_the_callback(lightning_loaded, tmp_path):
    """jsonargparse wraps a callback constructor's error in its own (a traceback); the user error is re-raised."""
    cb = tmp_path / "cb.yaml"
    cb.write_text(
        "trainer:\n  callbacks:\n    - class_path: pdx_lightning.callbacks.PuzzleValidation\n"
        "      init_args: {every_n_steps: 0}\n"
    )
    _one_line_each(
        [
            (["fit", "--config", str(cb)], "PuzzleValidation needs every_n_steps >= 1, got 0"),
            (
                ["fit", "--trainer.callbacks+=pdx_lightning.callbacks.BetaSchedule", "--trainer.callbacks.steps", "0"],
                "BetaSchedule needs steps >= 1",
            ),
            (
                [
                    "fit",
                    "--trainer.callbacks+=pdx_lightning.callbacks.SelfPlayGames",
                    "--trainer.callbacks.text_games",
                    "-1",
                ],
                "SelfPlayGames needs every_n_steps >= 1",
            ),
            (
                [
                    "fit",
                    "--trainer.callbacks+=pdx_lightning.callbacks.PolicySnapshot",
                    "--trainer.callbacks.top_k",
                    "0",
                ],
                "PolicySnapshot needs every_n_steps >= 1 and top_k >= 1",
            ),
        ]
    )


def test_user_error_in_finds_the_cause_through_a_wrapping_error():
    from pdx_lightning.errors import CallbackSettingError, user_error_in

    inner = CallbackSettingError("X needs every_n_steps >= 1, got 0")
    try:
        try:
            raise inner
        except ValueError as e:
            raise ValueError("Does not validate against any of the Union subtypes") from e
    except ValueError as outer:
        assert user_error_in(outer) is inner
    assert user_error_in(ValueError("a bug")) is None  # not a user error: the traceback stays


def _one_line_each(cases: list[tuple[list[str], str]]) -> None:
    for argv, phrase in cases:
        rc, lines = _pdx([*argv, "--trainer.max_steps", "1"] if "max_steps" not in argv[1] else argv)
        assert rc == 2 and len(lines) == 1 and phrase in lines[0], (argv[:2], lines[-3:])
        assert lines[0].startswith(f"pdx {argv[0]}: error: "), lines


@pytest.mark.slow  # more of the same (~1 s of CLI set-up each)
def test_more_config_errors_are_one_line(lightning_loaded, tmp_path):
    nested = tmp_path / "model.yaml"
    nested.write_text(BOMB)
    _one_line_each(
        [
            (["fit", "--model.nope", "1"], "unrecognized arguments: --model.nope 1"),
            (["fit", "--model.val_mates", BOMB], "the value of --model.val_mates: its YAML expands"),
            (["fit", "--model", str(nested)], "its YAML expands to more than"),
            (["pretrain", "--model.warmup_steps", "-5"], "--model.warmup_steps: must be an integer >= 0"),
            (["pretrain", "--data.val_fraction", "1.5"], "--data.val_fraction: must be a finite number > 0 and < 1"),
        ]
    )


def _checkpoint(path: Path, hparams: dict) -> Path:
    torch.save({"state_dict": {"w": torch.arange(4096.0)}, "hyper_parameters": hparams}, path)
    return path


def _zero_inside_a_record(path: Path) -> str:
    """Zero 64 bytes in the middle of the largest tensor record, leaving the zip's structure intact."""
    with zipfile.ZipFile(path) as zf:
        info = max((i for i in zf.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    with open(path, "r+b") as f:
        f.seek(start + info.file_size // 2)
        f.write(bytes(64))
    return info.filename


def test_a_checkpoint_with_a_damaged_record_is_refused_naming_file_and_record(tmp_path):
    from pdx_lightning.runtime.checkpoint_read import CheckpointCorruptError, read_checkpoint

    good = _checkpoint(tmp_path / "good.ckpt", {})
    assert read_checkpoint(good)["state_dict"]["w"][5] == 5
    bad = _checkpoint(tmp_path / "last.ckpt", {})
    record = _zero_inside_a_record(bad)
    with pytest.raises(CheckpointCorruptError) as e:
        read_checkpoint(bad)
    msg = str(e.value)
    assert "last.ckpt" in msg and record in msg and "CRC-32" in msg and "good.ckpt" in msg and "\n" not in msg


def test_fit_refuses_a_damaged_checkpoint_in_one_line(lightning_loaded, tmp_path):
    bad = _checkpoint(tmp_path / "bad.ckpt", {"base": "random:tiny"})
    record = _zero_inside_a_record(bad)
    rc, lines = _pdx(["fit", "--ckpt_path", str(bad), "--trainer.max_steps", "1"])
    assert rc == 2 and len(lines) == 1 and "bad.ckpt" in lines[0] and record in lines[0], lines


def test_resume_settings_are_compared_by_key():
    from pdx_lightning.runtime.lightning_cli import ResumeMismatchError, check_resume_settings

    stored = {
        "base": "base:small",
        "algorithm": {"exploration": "forward_kl", "temperature": "1"},
        "selfplay": {"n_games": 4},
    }
    check_resume_settings(
        stored, {**stored, "algorithm": {"exploration": "forward_kl", "temperature": 1.0, "beta": 0.5}}, "c"
    )
    for key, current in (
        ("selfplay.n_games=4", {**stored, "selfplay": {"n_games": 8}}),
        ("algorithm.exploration='forward_kl'", {**stored, "algorithm": {"exploration": "entropy", "temperature": "1"}}),
        ("base='base:small'", {**stored, "base": "random:tiny"}),
    ):
        with pytest.raises(ResumeMismatchError, match=f"--ckpt_path c was trained with model.{key}"):
            check_resume_settings(stored, current, "c")
    check_resume_settings({"base": "x"}, {"init": "y"}, "c")  # keys one side lacks are not compared


@pytest.mark.slow  # a real one-step fit (~30 s here), then two refused resumes
def test_fit_resume_with_other_games_or_arm_is_one_line(lightning_loaded, tmp_path, monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tiny_fit import CONF, tiny_fit_args

    monkeypatch.chdir(tmp_path)
    out = ["--trainer.logger.init_args.save_dir", str(tmp_path / "runs")]
    rc, lines = _pdx(["fit", "--config", CONF, *tiny_fit_args(1), *out])
    assert rc == 0, lines[-5:]
    ckpt = next((tmp_path / "runs").rglob("last.ckpt"))
    for flag, value, said in (
        ("--model.selfplay.n_games", "6", "model.selfplay.n_games=4, this run sets 6"),
        (
            "--model.algorithm.exploration",
            "entropy",
            "model.algorithm.exploration='forward_kl', this run sets 'entropy'",
        ),
    ):
        rc, lines = _pdx(["fit", "--config", CONF, *tiny_fit_args(2), flag, value, *out, "--ckpt_path", str(ckpt)])
        assert rc == 2 and len(lines) == 1 and said in lines[0] and "last.ckpt" in lines[0], lines[-3:]
