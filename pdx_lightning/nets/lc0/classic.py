"""Lc0 residual-tower networks (classic and SE: the T-series towers, Maia) ↔ ``nets/resnet.py``'s
``ClassicResNet``: the per-family mapping (interface: ``lc0/__init__.py``).

What is read (net.proto field under ``weights`` → ``ClassicResNet``), as the Lc0 engine reads it:

* ``input``, ``residual[i].conv1/conv2`` (3×3 convolutions), ``residual[i].se`` (``w1 b1 w2 b2``:
  FC C → s, FC s → 2C), the heads' ``policy1``/``policy`` (3×3, POLICY_CONVOLUTION) or ``policy`` +
  ``ip_pol_w/b`` (1×1 and FC to 1,858, POLICY_CLASSICAL), ``value`` + ``ip1_val_w/b`` + ``ip2_val_w/b``
  (3 outputs VALUE_WDL, 1 VALUE_CLASSICAL), ``moves_left`` + ``ip1_mov_w/b`` + ``ip2_mov_w/b``;
* a ``ConvBlock``'s weights are ``[out][in][kh][kw]``, a ``Layer`` FC's ``[out][in]`` (torch's
  layouts); its batch normalization is folded in as Lc0 folds it, in float32:
  ``g = gamma / sqrt(var + 1e-5)`` (``bn_stddivs`` holds the variance), ``W ← g·W``,
  ``b ← beta − g·(mean − b)``; absent gammas/betas are 1/0, absent biases 0, absent means: no BN;
* files without a ``network_format`` are INPUT_CLASSICAL_112_PLANE / POLICY_CLASSICAL /
  VALUE_CLASSICAL, and NETWORK_CLASSICAL / NETWORK_SE files have classical heads (Lc0's
  ``FixOlderWeightsFile``); the activation is ``default_activation`` (ReLU unless MISH).

Refused with ``Lc0FormatError`` saying what the file is and what is missing, before anything is
built: another input format (the canonicalized/hectoplies inputs: ``encoding.py`` builds the
classical 112 planes only), an attention policy on a tower (the "apmish" nets), VALUE_PARAM,
heads stored only in the multi-head layout, encoder layers on a tower, SE units on some blocks
only, and layer sizes that do not fit together.

Written (``encode``): the same fields, batch normalization already folded (weights and biases
only, which every Lc0 reads as "no batch norm"), format NETWORK_SE_WITH_HEADFORMAT (or
NETWORK_CLASSICAL_WITH_HEADFORMAT without SE units). LINEAR16 files declare the Lc0 version
their heads need (0.21; 0.26 with a moves-left head; 0.28 with mish); files in another encoding
declare 0.33, the first Lc0 that reads per-layer encodings, so an older Lc0 refuses them
("lc0 version >= 0.33.0 required") instead of misreading float bytes as LINEAR16.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pdx_lightning.nets.lc0 import schema as P
from pdx_lightning.nets.lc0.format import (
    Lc0ExportError,
    Lc0FormatError,
    NetFormat,
    encode_layer,
    enum_name,
    layer_size,
    layer_values,
    resolve,
)
from pdx_lightning.nets.resnet import ClassicConfig, ClassicResNet

__all__ = ["BODY", "FAMILY", "decode", "encode", "export_problems", "config_from_net", "field_table"]

BODY = "residual"
FAMILY = "classic"

NETWORK_CLASSICAL, NETWORK_SE = 1, 2
NETWORK_CLASSICAL_WITH_HEADFORMAT, NETWORK_SE_WITH_HEADFORMAT = 3, 4
POLICY_CLASSICAL, POLICY_CONVOLUTION = 1, 2
VALUE_CLASSICAL = 1
OUTPUT_CLASSICAL = 1
BN_EPSILON = 1e-5  # Lc0's batch-norm epsilon (network_legacy.cc)


# ---------------------------------------------------------------- the field ↔ parameter table


def field_table(cfg: ClassicConfig) -> list[tuple[str, str, str]]:
    """(net.proto ConvBlock/Layer path under ``weights``, state-dict key, kind) for every tensor
    of ``cfg``. kind: ``conv`` (a ConvBlock: key is the module, ``.weight``/``.bias`` or the
    moves-left head's ``_weight``/``_bias`` buffers), ``w``/``b`` (a plain Layer)."""
    t: list[tuple[str, str, str]] = [("input", "input", "conv")]
    for i in range(cfg.blocks):
        t += [
            (f"residual.{i}.conv1", f"blocks.{i}.conv1", "conv"),
            (f"residual.{i}.conv2", f"blocks.{i}.conv2", "conv"),
        ]
        if cfg.se_channels:
            t += [
                (f"residual.{i}.se.w1", f"blocks.{i}.se.fc1.weight", "w"),
                (f"residual.{i}.se.b1", f"blocks.{i}.se.fc1.bias", "b"),
                (f"residual.{i}.se.w2", f"blocks.{i}.se.fc2.weight", "w"),
                (f"residual.{i}.se.b2", f"blocks.{i}.se.fc2.bias", "b"),
            ]
    if cfg.policy == "convolution":
        t += [("policy1", "policy_head.conv1", "conv"), ("policy", "policy_head.conv2", "conv")]
    else:
        t += [
            ("policy", "policy_head.conv", "conv"),
            ("ip_pol_w", "policy_head.fc.weight", "w"),
            ("ip_pol_b", "policy_head.fc.bias", "b"),
        ]
    t += [
        ("value", "value_head.conv", "conv"),
        ("ip1_val_w", "value_head.fc1.weight", "w"),
        ("ip1_val_b", "value_head.fc1.bias", "b"),
        ("ip2_val_w", "value_head.fc2.weight", "w"),
        ("ip2_val_b", "value_head.fc2.bias", "b"),
    ]
    if cfg.moves_left_channels:
        m = "moves_left_head."
        t += [
            ("moves_left", f"{m}conv", "conv"),
            ("ip1_mov_w", f"{m}fc1_weight", "w"),
            ("ip1_mov_b", f"{m}fc1_bias", "b"),
            ("ip2_mov_w", f"{m}fc2_weight", "w"),
            ("ip2_mov_b", f"{m}fc2_bias", "b"),
        ]
    return t


def _param_keys(key: str) -> tuple[str, str]:
    """The weight and bias keys of a conv entry (a module's, or the moves-left head's buffers)."""
    if key.startswith("moves_left_head."):
        return f"{key}_weight", f"{key}_bias"
    return f"{key}.weight", f"{key}.bias"


# ---------------------------------------------------------------- reading


def _present(weights, path: str) -> bool:
    layer = resolve(weights, path)
    return layer is not None and bool(layer.params)


def _conv_outputs(weights, path: str, where: str) -> int:
    """Output channels of the ConvBlock at ``path`` (from its biases, else its batch-norm means)."""
    for part in ("biases", "bn_means"):
        if _present(weights, f"{path}.{part}"):
            return layer_size(weights, f"{path}.{part}", where)
    if not _present(weights, f"{path}.weights"):
        raise Lc0FormatError(f"{where}: missing weights.{path}")
    raise Lc0FormatError(f"{where}: weights.{path} has neither biases nor batch-norm means")


def _formats(fmt: NetFormat) -> tuple[int, int, int]:
    """(input, policy, value) formats as Lc0 reads them (``FixOlderWeightsFile``)."""
    if not fmt.declared:
        return P.INPUT_CLASSICAL_112_PLANE, POLICY_CLASSICAL, VALUE_CLASSICAL
    if fmt.network in (NETWORK_CLASSICAL, NETWORK_SE):
        return fmt.input, POLICY_CLASSICAL, VALUE_CLASSICAL
    return fmt.input, fmt.policy, fmt.value


def config_from_net(net, fmt: NetFormat, where: str) -> ClassicConfig:
    """The ``ClassicConfig`` of a residual-tower ``net`` (sizes read from byte counts, nothing
    decoded), or Lc0FormatError naming what the file is and what cannot be mapped."""
    w = net.weights
    inp, pol, val = _formats(fmt)
    declared = enum_name(P.NETWORK_NAMES, fmt.network) if fmt.declared else "no network_format (oldest files)"
    what = f"a residual-tower network ({fmt.n_residual} blocks, {declared})"
    problems = []
    if fmt.declared and fmt.network not in (
        NETWORK_CLASSICAL,
        NETWORK_SE,
        NETWORK_CLASSICAL_WITH_HEADFORMAT,
        NETWORK_SE_WITH_HEADFORMAT,
    ):
        problems.append(f"network format {enum_name(P.NETWORK_NAMES, fmt.network)} is not a residual-tower format")
    if inp != P.INPUT_CLASSICAL_112_PLANE:
        problems.append(
            f"input format {enum_name(P.INPUT_NAMES, inp)} (pdx encodes "
            f"INPUT_CLASSICAL_112_PLANE only: chesscore/encoding.py)"
        )
    if pol not in (POLICY_CLASSICAL, POLICY_CONVOLUTION):
        problems.append(
            f"policy format {enum_name(P.POLICY_NAMES, pol)} (the classic family has "
            f"POLICY_CLASSICAL and POLICY_CONVOLUTION heads)"
        )
    if val not in (VALUE_CLASSICAL, P.VALUE_WDL):
        problems.append(
            f"value format {enum_name(P.VALUE_NAMES, val)} (the classic family has VALUE_WDL and VALUE_CLASSICAL heads)"
        )
    if fmt.moves_left not in (P.MOVES_LEFT_NONE, P.MOVES_LEFT_V1):
        problems.append(f"unknown moves-left format {fmt.moves_left}")
    if fmt.default_activation not in (P.DEFAULT_ACTIVATION_RELU, P.DEFAULT_ACTIVATION_MISH):
        problems.append(f"unknown default activation {fmt.default_activation}")
    if fmt.n_encoder:
        problems.append(f"{fmt.n_encoder} attention encoder layers on the tower (a hybrid body)")
    if not fmt.n_residual:
        problems.append("no residual blocks")
    has_se = [b.HasField("se") for b in w.residual]
    if any(has_se) and not all(has_se):
        problems.append(
            f"SE units on {sum(has_se)} of {len(has_se)} blocks (the classic family has them on every block or none)"
        )
    head_fields = ("policy", "value") + (("policy1",) if pol == POLICY_CONVOLUTION else ())
    missing = [f for f in head_fields if not w.HasField(f)]
    if missing and (w.HasField("policy_heads") or w.HasField("value_heads")):
        problems.append("heads stored in the multi-head layout (policy_heads/value_heads) only")
    elif missing:
        problems.append(f"no {', '.join(missing)} head weights")
    if problems:
        raise Lc0FormatError(f"{where}: {what}, which the classic family cannot hold: " + "; ".join(problems))

    size = lambda path: layer_size(w, path, where)  # noqa: E731
    C = _conv_outputs(w, "input", where)
    se = size("residual.0.se.b1") if has_se and has_se[0] else 0
    policy_channels = _conv_outputs(w, "policy", where)
    ip2 = size("ip2_val_b")
    if ip2 != (3 if val == P.VALUE_WDL else 1):
        raise Lc0FormatError(
            f"{where}: {what}: value format {enum_name(P.VALUE_NAMES, val)} with {ip2} value outputs (ip2_val_b)"
        )
    mlh = fmt.moves_left == P.MOVES_LEFT_V1
    try:
        cfg = ClassicConfig(
            name=Path(where).name,
            channels=C,
            blocks=fmt.n_residual,
            se_channels=se,
            activation="mish" if fmt.default_activation == P.DEFAULT_ACTIVATION_MISH else "relu",
            policy="convolution" if pol == POLICY_CONVOLUTION else "classical",
            policy_channels=policy_channels,
            value="wdl" if val == P.VALUE_WDL else "classical",
            value_channels=_conv_outputs(w, "value", where),
            value_hidden=size("ip1_val_b"),
            moves_left_channels=_conv_outputs(w, "moves_left", where) if mlh else 0,
            moves_left_hidden=size("ip1_mov_b") if mlh else 128,
        )
    except ValueError as e:
        raise Lc0FormatError(f"{where}: {what}: inconsistent layer sizes: {e}") from e
    return cfg


def _fold(
    weight: torch.Tensor, bias: torch.Tensor | None, bn: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """A ConvBlock's (weight, bias) with its batch normalization folded in, in float32 as Lc0 does."""
    out = weight.shape[0]
    if bias is None:
        bias = torch.zeros(out)
    if "bn_means" not in bn:
        return weight, bias
    gamma = bn.get("bn_gammas", torch.ones(out))
    beta = bn.get("bn_betas", torch.zeros(out))
    g = gamma * (1.0 / torch.sqrt(bn["bn_stddivs"] + BN_EPSILON))
    mean = bn["bn_means"] - bias
    return weight * g.reshape(-1, *([1] * (weight.dim() - 1))), -g * mean + beta


def decode(net, fmt: NetFormat, where: str) -> tuple[ClassicConfig, dict[str, torch.Tensor]]:
    """A residual-tower ``net`` → (classic config, complete state dict): every layer's size is
    checked against the config's shapes (on the meta device) before it is reshaped."""
    cfg = config_from_net(net, fmt, where)
    with torch.device("meta"):
        shapes = {k: tuple(v.shape) for k, v in ClassicResNet(cfg).state_dict().items()}
    w = net.weights

    def values(path: str, shape: tuple[int, ...], key: str) -> torch.Tensor:
        v = layer_values(w, path, where, shape, key)  # size checked, then decoded
        n = 1
        for d in shape:
            n *= d
        if v.numel() != n:
            raise Lc0FormatError(
                f"{where}: weights.{path} has {v.numel()} values, expected {'×'.join(map(str, shape))} = {n} for {key}"
            )
        return v.reshape(shape)

    state: dict[str, torch.Tensor] = {}
    for path, key, kind in field_table(cfg):
        if kind != "conv":
            state[key] = values(path, shapes[key], key)
            continue
        wkey, bkey = _param_keys(key)
        out = shapes[bkey][0]
        weight = values(f"{path}.weights", shapes[wkey], wkey)
        bias = values(f"{path}.biases", (out,), bkey) if _present(w, f"{path}.biases") else None
        bn = {
            p: values(f"{path}.{p}", (out,), f"{key} {p}")
            for p in ("bn_means", "bn_stddivs", "bn_gammas", "bn_betas")
            if _present(w, f"{path}.{p}")
        }
        if "bn_means" in bn and "bn_stddivs" not in bn:
            raise Lc0FormatError(f"{where}: weights.{path} has bn_means but no bn_stddivs")
        state[wkey], state[bkey] = _fold(weight, bias, bn)
    return cfg, state


# ---------------------------------------------------------------- writing


def export_problems(cfg, allow_castling_mismatch: bool = False) -> list[str]:
    """Why ``cfg``'s computation has no exact Lc0 equivalent: none for a ``ClassicConfig`` (the
    family computes only what Lc0's format expresses; castling is always scored king-takes-rook)."""
    if not isinstance(cfg, ClassicConfig):
        return [f"{type(cfg).__name__} is not a classic-family config"]
    return []


def _min_version(cfg: ClassicConfig, encoding: int) -> tuple[int, int, int]:
    if encoding != P.LINEAR16:
        return (0, 33, 0)
    if cfg.activation == "mish":
        return (0, 28, 0)
    return (0, 26, 0) if cfg.moves_left_channels else (0, 21, 0)


def encode(model: ClassicResNet, encoding: int, moves_left: bool = True, allow_castling_mismatch: bool = False):
    """``model`` as a ``schema.Net`` (residual-tower format, heads in the top-level fields), every
    layer in ``encoding``. ``moves_left=False`` drops a carried moves-left head."""
    cfg = model.cfg
    problems = export_problems(cfg, allow_castling_mismatch)
    if problems:
        raise Lc0ExportError("the network cannot be written in Lc0's format:\n  - " + "\n  - ".join(problems))
    if not moves_left and cfg.moves_left_channels:
        cfg = ClassicConfig(**{**cfg.to_dict(), "moves_left_channels": 0})
    state = {k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()}
    net = P.Net(magic=P.MAGIC)
    net.min_version.major, net.min_version.minor, net.min_version.patch = _min_version(cfg, encoding)
    net.format.weights_encoding = P.LINEAR16  # each Layer carries its own encoding, which overrides this
    nf = net.format.network_format
    nf.input = P.INPUT_CLASSICAL_112_PLANE
    nf.output = P.OUTPUT_WDL if cfg.value == "wdl" else OUTPUT_CLASSICAL
    nf.network = NETWORK_SE_WITH_HEADFORMAT if cfg.se_channels else NETWORK_CLASSICAL_WITH_HEADFORMAT
    nf.policy = POLICY_CONVOLUTION if cfg.policy == "convolution" else POLICY_CLASSICAL
    nf.value = P.VALUE_WDL if cfg.value == "wdl" else VALUE_CLASSICAL
    nf.moves_left = P.MOVES_LEFT_V1 if cfg.moves_left_channels else P.MOVES_LEFT_NONE
    nf.default_activation = P.DEFAULT_ACTIVATION_MISH if cfg.activation == "mish" else P.DEFAULT_ACTIVATION_RELU
    w = net.weights
    for _ in range(cfg.blocks):
        w.residual.add()
    for path, key, kind in field_table(cfg):
        if kind == "conv":
            wkey, bkey = _param_keys(key)
            resolve(w, f"{path}.weights", create=True).CopyFrom(encode_layer(state[wkey], encoding))
            resolve(w, f"{path}.biases", create=True).CopyFrom(encode_layer(state[bkey], encoding))
        else:
            resolve(w, path, create=True).CopyFrom(encode_layer(state[key], encoding))
    return net
