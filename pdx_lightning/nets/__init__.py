"""Networks: the Chessformer, its presets, and ``load_model`` for every model name.

A model name ``M`` is one of:

* ``base:<name>``   a bundled network, ``data/base_<name>.pt`` (e.g. ``base:small``);
* ``random:<preset>[:<seed>]``  a freshly initialized Chessformer (tests, smoke runs);
* ``*.ckpt``        a Lightning checkpoint of ``pdx fit``: EMA weights, or the online
                    weights with ``weights="online"``;
* ``*.pt``          a network file written by ``save_network``;
* ``*.pb.gz``       an Lc0 network file (``pdx_lightning.nets.lc0``).

Everything is loaded with ``torch.load(weights_only=True)``: a file carrying a
pickled object is refused instead of executed.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch

from pdx_lightning.nets.chessformer import PRESETS, Chessformer, ModelConfig, NetOutput, count_params

__all__ = ["Chessformer", "ModelConfig", "NetOutput", "PRESETS", "count_params", "load_model",
           "save_network", "resolve_model_path", "file_sha256", "ModelLoadError", "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


class ModelLoadError(ValueError):
    """A model name or file that cannot be turned into a network."""


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def resolve_model_path(name: str) -> Path | None:
    """The file behind a model name (``None`` for ``random:``)."""
    if name.startswith("random:"):
        return None
    if name.startswith("base:"):
        path = DATA_DIR / f"base_{name[5:]}.pt"
        if not path.is_file():
            raise ModelLoadError(f"bundled network {name!r} not found at {path}")
        return path
    path = Path(name)
    if not path.is_file():
        raise ModelLoadError(f"model {name!r}: no such file (expected base:<name>, random:<preset>, "
                             f"a .ckpt, a .pt or an Lc0 .pb.gz)")
    return path


def save_network(model: Chessformer, path: str | os.PathLike, meta: dict | None = None) -> None:
    """Write ``model`` as a self-describing ``.pt`` (config + tensors + meta); atomic."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save({"format": "pdx_network/1", "config": model.cfg.to_dict(),
                "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
                "meta": meta or {}}, tmp)
    os.replace(tmp, path)


def _safe_load(path: Path) -> dict:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle payloads, truncation, wrong format
        raise ModelLoadError(f"{path}: cannot be loaded safely (weights_only=True): {e}") from e


def _build(config: dict, state: dict, where: str) -> Chessformer:
    for k, v in state.items():  # a NaN/inf weight would only surface later as a NaN loss or a silent bad move
        if isinstance(v, torch.Tensor) and v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise ModelLoadError(f"{where}: tensor {k!r} holds NaN or infinite values")
    # The stored config is checked against the stored tensors on the meta device before anything is
    # allocated: a config claiming a huge network must not allocate (or loop over) what the file lacks.
    layers = {str(k).split(".")[1] for k in state if str(k).startswith("layers.")}
    if not isinstance(config, dict) or config.get("n_layers", len(layers)) != len(layers):
        raise ModelLoadError(f"{where}: the stored model config does not describe the stored weights "
                             f"({len(layers)} encoder layers stored)")
    try:
        cfg = ModelConfig(**config)
        with torch.device("meta"):
            want = {k: tuple(v.shape) for k, v in Chessformer(cfg).state_dict().items()}
    except (TypeError, ValueError, KeyError, RuntimeError) as e:
        raise ModelLoadError(f"{where}: unusable stored model config: {e}") from e
    got = {str(k): tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)}
    if want != got:
        bad = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])[:3]
        raise ModelLoadError(f"{where}: weights do not fit the stored model config (missing "
                             f"{sorted(want.keys() - got.keys())[:3]}, unexpected {sorted(got.keys() - want.keys())[:3]}, "
                             f"shape mismatches {[(k, got[k], want[k]) for k in bad]})")
    try:
        model = Chessformer(cfg)
        model.load_state_dict(state)
    except (TypeError, ValueError, RuntimeError) as e:
        raise ModelLoadError(f"{where}: weights do not fit the stored model config: {e}") from e
    return model.eval()


def load_model(name: str, weights: str = "ema") -> Chessformer:
    """Load the network named ``name`` (see module docstring), in eval mode on the CPU."""
    if name.startswith("random:"):
        parts = name.split(":")
        try:
            seed = int(parts[2]) if len(parts) > 2 else 0
            cfg = ModelConfig.from_name(parts[1])
        except (KeyError, ValueError) as e:
            raise ModelLoadError(f"model {name!r}: expected random:<preset>[:<int seed>] ({e})") from None
        torch.manual_seed(seed)
        return Chessformer(cfg).eval()
    path = resolve_model_path(name)
    if path.name.endswith(".pb.gz"):
        from pdx_lightning.nets import lc0  # noqa: PLC0415  (optional protobuf dependency)

        return lc0.load_lc0(path).eval()
    blob = _safe_load(path)
    if not isinstance(blob, dict) or not isinstance(blob.get("state_dict"), dict):
        what = f"keys: {sorted(map(str, blob))[:8]}" if isinstance(blob, dict) else f"a {type(blob).__name__}"
        raise ModelLoadError(f"{path}: not a pdx network or pdx checkpoint ({what})")
    if blob.get("format") == "pdx_network/1":
        return _build(blob["config"], blob["state_dict"], str(path))
    if "state_dict" in blob and "pdx_model_config" in blob:  # Lightning checkpoint of PDXModule
        if weights not in ("ema", "online"):
            raise ModelLoadError(f"weights must be 'ema' or 'online', got {weights!r}")
        prefix = f"{weights}."
        state = {k[len(prefix):]: v for k, v in blob["state_dict"].items() if str(k).startswith(prefix)}
        if not state:
            raise ModelLoadError(f"{path}: checkpoint has no {weights!r} weights")
        return _build(blob["pdx_model_config"], state, str(path))
    raise ModelLoadError(f"{path}: not a pdx network or pdx checkpoint (keys: {sorted(map(str, blob))[:8]})")
