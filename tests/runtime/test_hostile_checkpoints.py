"""Hostile ``--ckpt_path`` checkpoints: refused by ``read_checkpoint`` before they allocate (issue 20)."""

from __future__ import annotations

import zipfile

import pytest
import torch

from hostile_files import MiB, baseline_peak_mb, refusal_peak_mb, zip_bomb_member
from pdx_lightning.errors import UserError
from pdx_lightning.runtime.checkpoint_read import CheckpointLimitError, CheckpointLoadError, read_checkpoint

IMPORTS = "from pdx_lightning.runtime.checkpoint_read import read_checkpoint, CheckpointLoadError"


def _ckpt(path, **extra) -> None:
    torch.save(
        {
            "state_dict": {"online.w": torch.randn(64, 64), "ema.w": torch.randn(64, 64)},
            "hyper_parameters": {"base": "random:tiny"},
            **extra,
        },
        path,
    )


def _zip_bomb_checkpoint(tmp_path):
    """``last.ckpt`` whose first tensor is 1 GiB of zeros in < 2 MiB, next to a good ``epoch=0-step=1.ckpt``."""
    ok = tmp_path / "epoch=0-step=1.ckpt"
    _ckpt(ok)
    with zipfile.ZipFile(ok) as zf:
        infos = zf.infolist()
        others = {i.filename: zf.read(i) for i in infos if not i.filename.endswith("data/0")}
        name = next(i.filename for i in infos if i.filename.endswith("data/0"))
    bomb = zip_bomb_member(tmp_path / "last.ckpt", name, 1 << 30, others=others)
    assert bomb.stat().st_size < 2 * MiB
    return bomb


def test_a_zip_bomb_checkpoint_is_refused_naming_the_newest_other_checkpoint(tmp_path):
    bomb = _zip_bomb_checkpoint(tmp_path)
    with pytest.raises(
        CheckpointLimitError,
        match=r"last.ckpt: member .* a zip bomb \(limit 200x\).*"
        r"PDX_MAX_COMPRESSION_RATIO=400; the newest other "
        r"checkpoint there is .*step=1.ckpt",
    ) as e:
        read_checkpoint(bomb)
    assert isinstance(e.value, UserError) and isinstance(e.value, CheckpointLoadError)


@pytest.mark.slow  # two fresh interpreters importing Lightning: ~13 s of CPU
def test_a_zip_bomb_checkpoint_is_refused_in_bounded_memory(tmp_path):
    bomb = _zip_bomb_checkpoint(tmp_path)
    base = baseline_peak_mb(IMPORTS)
    peak, _ = refusal_peak_mb(f"read_checkpoint({str(bomb)!r})", "CheckpointLoadError", imports=IMPORTS)
    assert peak - base < 64, f"peak {peak:.0f} MB vs baseline {base:.0f} MB"


def test_checkpoint_cap_expanded_tensors_and_truncation(tmp_path, monkeypatch):
    p = tmp_path / "a.ckpt"
    _ckpt(p)
    assert read_checkpoint(p)["hyper_parameters"] == {"base": "random:tiny"}
    monkeypatch.setenv("PDX_MAX_CHECKPOINT_BYTES", "16K")
    with pytest.raises(
        CheckpointLimitError,
        match=r"declares .* \(limit 16.0 KiB\).*"
        r"PDX_MAX_CHECKPOINT_BYTES=32K",
    ):
        read_checkpoint(p)
    monkeypatch.delenv("PDX_MAX_CHECKPOINT_BYTES")
    _ckpt(p, loops={"w": torch.zeros(1).expand(1 << 20, 1 << 20)})  # a 4 TB view of one float
    with pytest.raises(CheckpointLimitError, match="expanded view"):
        read_checkpoint(p)
    _ckpt(p)
    p.write_bytes(p.read_bytes()[:-200])  # cut inside the zip directory
    with pytest.raises(CheckpointLimitError, match="a.ckpt: not a readable PyTorch file"):
        read_checkpoint(p)
