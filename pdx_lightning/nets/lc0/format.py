"""Lc0's weight-file format, independent of any network family.

* errors: :class:`Lc0FormatError` (a file that cannot be read or mapped; a ``ModelLoadError``)
  and :class:`Lc0ExportError` (a network the format cannot express);
* files: :func:`read_net` (``.pb.gz`` or ``.pb`` → ``schema.Net``, magic checked, memory bounded:
  :class:`Lc0FileLimitError`) and
  :func:`write_net` (``schema.Net`` → ``.pb.gz``, atomic, byte-reproducible);
* what a file declares: :func:`detect_format` → :class:`NetFormat` (network body kind, input,
  policy, value and moves-left formats), so ``lc0.load_lc0`` can dispatch on the body;
* weight encodings of a ``Weights.Layer`` (``encoding`` field, LINEAR16 when absent):
  :func:`decode_layer` / :func:`encode_layer`, and :func:`layer_values` / :func:`layer_size`
  to read a layer by its path under ``weights`` with errors that name the path;

  - ``LINEAR16``: little-endian uint16 ``q``; value = ``θ · (max_val − min_val) + min_val`` with
    ``θ = q / 0xffff`` and ``max_val − min_val`` rounded to float32 and the multiply-add rounded
    once, as every released Lc0 (≤ v0.32, ``weights_adapter.cc``) computes it when compiled with
    FMA (GCC/Clang with ``-march=native`` on any current x86). It matters: a weight one float32
    step off, times the raw rule-50 plane (up to ~100), moves Maia's raw policy logits by up to
    4.6e-4; decoded this way pdx and Lc0 agree to 2e-5 on all nine Maia nets. (Lc0 master's
    ``min·(1−θ) + max·θ`` differs from it in the last bit.)
  - ``FLOAT16`` / ``BFLOAT16``: little-endian IEEE half / bfloat16 (the top half of a float32);
  - ``FLOAT32``: little-endian float32;

* policy layouts (defined in ``nets/lc0_policy.py``, outside this package, so that the families'
  models use them without importing the lc0 package; re-exported here): our 4,288 logits and
  Lc0's classic 1,858-move list: :data:`ATTN_TO_1858`, :data:`POLICY_1858`, :func:`policy_to_1858`,
  :func:`policy_from_1858`, :func:`lc0_1858_moves`, and :func:`castling_to_ours` (Lc0 names
  castling king-takes-rook, e1h1; we the king's destination, e1g1).
"""

from __future__ import annotations

import gzip
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from google.protobuf.message import DecodeError

from pdx_lightning.files.atomicfile import atomic_write
from pdx_lightning.files.safeio import NET_BYTES, FileLimitError, gunzip_bounded, human
from pdx_lightning.nets.lc0 import schema as P
from pdx_lightning.nets.lc0_policy import (
    ATTN_TO_1858,
    POLICY_1858,
    castling_to_ours,
    lc0_1858_moves,
    policy_from_1858,
    policy_to_1858,
)
from pdx_lightning.nets.seam import ModelLoadError

__all__ = [
    "Lc0FormatError",
    "Lc0FileLimitError",
    "Lc0ExportError",
    "LayerDecodeError",
    "read_net",
    "write_net",
    "NetFormat",
    "detect_format",
    "enum_name",
    "decode_layer",
    "encode_layer",
    "resolve",
    "layer_values",
    "layer_size",
    "ATTN_TO_1858",
    "POLICY_1858",
    "lc0_1858_moves",
    "policy_to_1858",
    "policy_from_1858",
    "castling_to_ours",
    "ENCODINGS",
]

ENCODINGS = P.ENCODINGS


class Lc0FormatError(ModelLoadError):
    """An Lc0 weights file that is corrupt, truncated, or of a kind no pdx family can hold."""


class Lc0FileLimitError(FileLimitError, Lc0FormatError):
    """An Lc0 file refused by a reading bound (decompressed size, compression ratio, tower depth)
    before it is decoded; the message says how to raise the bound for a legitimate file."""


# Deeper than any Lc0 network (BT4: 15 encoder layers; the largest residual towers: 40 blocks); a
# file claiming more is refused before even a meta-device model of that depth is built.
MAX_TOWER = 512


class Lc0ExportError(ValueError):
    """A network whose computation Lc0's weight format cannot express."""


class LayerDecodeError(ValueError):
    """A ``Weights.Layer`` whose bytes cannot be decoded (the caller adds where it is)."""


# ---------------------------------------------------------------- files


def read_net(path: str | os.PathLike):
    """An Lc0 weights file (gzipped or not) as a ``schema.Net``; Lc0FormatError if it is not one.

    Bounded before anything is decoded: the gzip stream is decompressed with a cap
    (:data:`files.safeio.NET_BYTES`, ``$PDX_MAX_NET_BYTES``, default 2 GiB: 5x a BT4 stored at 16 bits)
    and a compression-ratio check (a gzip of zeros is refused after a few MiB), and a file declaring
    more than :data:`MAX_TOWER` encoder layers or residual blocks is refused (Lc0FileLimitError).
    Each layer's size is checked against the architecture before it is decoded (:func:`layer_values`).
    """
    path = Path(path)
    limit = NET_BYTES.value()
    data: bytes | bytearray
    try:
        with open(path, "rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        if gzipped:
            data = gunzip_bounded(path, limit, NET_BYTES.override(), error=Lc0FileLimitError)
        else:
            size = path.stat().st_size
            if size > limit:
                raise Lc0FileLimitError(
                    path, f"is {human(size)} (an uncompressed Lc0 file)", human(limit), NET_BYTES.override()
                )
            data = path.read_bytes()
    except OSError as e:
        raise Lc0FormatError(f"{path}: cannot be read ({e})") from e
    try:
        net = P.Net.FromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise Lc0FormatError(f"{path}: not a readable Lc0 protobuf (net.proto Net): {e}") from e
    del data
    if not net.HasField("magic") or net.magic != P.MAGIC:
        found = f"0x{net.magic:x}" if net.HasField("magic") else "none"
        raise Lc0FormatError(f"{path}: not an Lc0 weights file (magic {found}, expected 0x{P.MAGIC:x})")
    for tower in ("encoder", "residual"):
        depth = len(getattr(net.weights, tower))
        if depth > MAX_TOWER:
            raise Lc0FileLimitError(
                path, f"declares {depth:,} {tower} layers (no Lc0 network has more than ~40)", f"{MAX_TOWER}"
            )
    return net


def write_net(net, path: str | os.PathLike) -> Path:
    """Write ``net`` gzipped to ``path`` atomically; the same net gives the same bytes (gzip mtime 0, and
    no file name in the gzip header: it would be the temporary file's)."""
    path = Path(path)
    with atomic_write(path) as f, gzip.GzipFile(filename="", fileobj=f, mode="wb", compresslevel=6, mtime=0) as gz:
        gz.write(net.SerializeToString())
    return path


# ---------------------------------------------------------------- what a file declares


def enum_name(table: dict[int, str], value: int) -> str:
    """``"NAME (value)"`` of a net.proto enum value (``unknown`` when the table lacks it)."""
    return f"{table.get(value, 'unknown')} ({value})"


@dataclass(frozen=True)
class NetFormat:
    """What an Lc0 file says it is. ``body``: ``"attention"`` (encoder layers: BT4, T82) or
    ``"residual"`` (an input convolution and residual blocks: the classic/SE towers, Maia)."""

    body: str
    network: int
    input: int
    policy: int
    value: int
    moves_left: int
    default_activation: int
    n_residual: int
    n_encoder: int
    declared: bool  # whether the file has a network_format at all (net.proto: absent means
    # INPUT_CLASSICAL_112_PLANE / OUTPUT_CLASSICAL / NETWORK_CLASSICAL)

    def describe(self) -> str:
        return (
            f"network {enum_name(P.NETWORK_NAMES, self.network)}, "
            f"input {enum_name(P.INPUT_NAMES, self.input)}, "
            f"policy {enum_name(P.POLICY_NAMES, self.policy)}, "
            f"value {enum_name(P.VALUE_NAMES, self.value)}, "
            f"{self.n_residual} residual blocks, {self.n_encoder} encoder layers"
        )


def detect_format(net, where: str) -> NetFormat:
    """The body kind and declared formats of ``net``. ONNX payloads, files without weights and
    bodies of neither kind are Lc0FormatErrors naming what was found."""
    nf, w = net.format.network_format, net.weights
    if net.HasField("onnx_model") or nf.network == P.NETWORK_ONNX:
        raise Lc0FormatError(f"{where}: an ONNX-converted network (NETWORK_ONNX); pass the original .pb.gz")
    if not net.HasField("weights"):
        raise Lc0FormatError(f"{where}: the file holds no weights")
    if len(w.residual) or w.HasField("input"):
        body = "residual"
    elif nf.network in P.ATTENTION_BODY_NETWORKS and len(w.encoder):
        body = "attention"
    else:
        raise Lc0FormatError(
            f"{where}: network format {enum_name(P.NETWORK_NAMES, nf.network)} with "
            f"{len(w.encoder)} encoder layers is not an attention-body network, and it "
            f"has no residual tower either"
        )
    return NetFormat(
        body=body,
        network=nf.network,
        input=nf.input,
        policy=nf.policy,
        value=nf.value,
        moves_left=nf.moves_left,
        default_activation=nf.default_activation,
        n_residual=len(w.residual),
        n_encoder=len(w.encoder),
        declared=net.HasField("format") and net.format.HasField("network_format"),
    )


# ---------------------------------------------------------------- layers


def decode_layer(layer) -> torch.Tensor:
    """A ``Weights.Layer`` → flat float32 tensor (module docstring: encodings);
    LayerDecodeError for an unknown encoding, a ragged byte count or non-finite values."""
    enc = layer.encoding if layer.HasField("encoding") else P.LINEAR16
    raw = layer.params
    width = 4 if enc == P.FLOAT32 else 2
    if enc not in P.ENCODING_NAMES:
        raise LayerDecodeError(f"unknown layer encoding {enc}")
    if len(raw) % width:
        raise LayerDecodeError(f"{len(raw)} bytes is not a whole number of {P.ENCODING_NAMES[enc]} values")
    if enc == P.LINEAR16:
        lo, hi = np.float32(layer.min_val), np.float32(layer.max_val)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise LayerDecodeError(f"LINEAR16 range [{lo}, {hi}] is not finite")
        with np.errstate(over="ignore"):  # a range too wide for float32 is caught as non-finite below
            theta = np.frombuffer(raw, dtype="<u2").astype(np.float32) / np.float32(0xFFFF)  # float32
            span = np.float64(hi - lo)  # a float32 value
            values = (theta.astype(np.float64) * span + np.float64(lo)).astype(np.float32)  # one rounding
    elif enc == P.FLOAT16:
        values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif enc == P.BFLOAT16:
        values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(values).all():
        raise LayerDecodeError(f"{P.ENCODING_NAMES[enc]} values include NaN or infinity")
    return torch.from_numpy(values.copy())


def encode_layer(values: torch.Tensor, encoding: int = P.LINEAR16):
    """Values (any shape, flattened) → a ``Weights.Layer``. LINEAR16 stores the tensor's own
    min/max and rounds each value to the nearest of the 65,536 levels between them."""
    v = values.detach().to("cpu", torch.float32).reshape(-1).numpy()
    if not np.isfinite(v).all():
        raise ValueError("cannot encode NaN or infinite weights")
    layer = P.Layer(encoding=encoding)
    if encoding == P.LINEAR16:
        lo, hi = (np.float32(v.min()), np.float32(v.max())) if v.size else (np.float32(0), np.float32(0))
        span = np.float64(hi) - np.float64(lo)
        q = np.zeros(v.shape, np.float64) if span == 0 else np.rint((v.astype(np.float64) - lo) / span * 0xFFFF)
        layer.min_val, layer.max_val = float(lo), float(hi)
        layer.params = np.clip(q, 0, 0xFFFF).astype("<u2").tobytes()
    elif encoding == P.FLOAT16:
        layer.params = v.astype("<f2").tobytes()
    elif encoding == P.BFLOAT16:
        bf16 = torch.from_numpy(v).to(torch.bfloat16).view(torch.int16).numpy()
        layer.params = bf16.astype("<i2").tobytes()
    elif encoding == P.FLOAT32:
        layer.params = v.astype("<f4").tobytes()
    else:
        raise ValueError(f"unknown layer encoding {encoding}")
    return layer


def resolve(msg, path: str, create: bool = False):
    """The sub-message of ``msg`` at ``path`` (``"encoder.3.mha.q_w"``: fields, and indices into
    repeated fields); None if absent and not ``create`` (``create`` adds missing singular fields)."""
    for part in path.split("."):
        if part.isdigit():
            if int(part) >= len(msg):
                return None
            msg = msg[int(part)]
        else:
            try:
                if not create and not msg.HasField(part):
                    return None
            except ValueError:  # a repeated field: no presence, indexed by the next part
                pass
            msg = getattr(msg, part)
    return msg


def layer_size(weights, path: str, where: str) -> int:
    """How many values the layer at ``weights.<path>`` holds (from its byte count, not decoded);
    Lc0FormatError if it is missing or empty."""
    layer = resolve(weights, path)
    if layer is None or not layer.params:
        raise Lc0FormatError(f"{where}: missing weights.{path}")
    return len(layer.params) // (4 if layer.encoding == P.FLOAT32 else 2)


def layer_values(weights, path: str, where: str, shape: tuple[int, ...] | None = None, key: str = "") -> torch.Tensor:
    """The decoded flat float32 values of the layer at ``weights.<path>``; Lc0FormatError naming
    the path if it is missing, empty or undecodable, or, given the ``shape`` the architecture
    expects (for parameter ``key``), if its byte count holds another number of values: checked
    before decoding, so a huge or lying layer never gets its (2-4x larger) float copy allocated."""
    layer = resolve(weights, path)
    if layer is None or not layer.params:
        raise Lc0FormatError(f"{where}: missing weights.{path}")
    if shape is not None:
        n, want = layer_size(weights, path, where), math.prod(shape)
        if n != want:
            raise Lc0FormatError(
                f"{where}: weights.{path} has {n} values, expected "
                f"{'×'.join(map(str, shape))} = {want}" + (f" for {key}" if key else "")
            )
    try:
        return decode_layer(layer)
    except LayerDecodeError as e:
        raise Lc0FormatError(f"{where}: weights.{path}: {e}") from e
