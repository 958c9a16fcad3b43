"""Lc0 attention-body networks (BT4, T82) ↔ the Chessformer: the per-family mapping.

What is mapped (net.proto field → Chessformer), computed as the Lc0 engine computes it:

* input: INPUT_CLASSICAL_112_PLANE, the raw rule-50 count on plane 109 (Lc0 scales nothing;
  ``rule50_scale = 1``; on export our ``rule50_scale`` is folded into the embedding column 109);
* embedding: PE_DENSE (BT4: board preprocessing ``ip_emb_preproc``, ``ip_emb``, LayerNorm, gates,
  embedding FFN + LayerNorm) or PE_MAP (T82: Lc0's fixed 64-wide square table, ``ip_emb``, gates);
* encoders: fused Q/K/V, smolgen (swish, LayerNorm eps 1e-3, shared ``smolgen_w``), post-LN with
  DeepNorm ``LN(x + f(x)·(2N)^-¼)``, LayerNorm eps 1e-3 (PE_DENSE) or 1e-6 (PE_MAP);
* heads: the ``vanilla`` attention policy with unscaled promotion offsets, the ``winner`` WDL value
  head, and the moves-left head (carried, see ``chessformer.MovesLeftHead``); other heads in a
  multi-head file (optimistic, soft, opponent, q, st) are ignored, as Lc0 does by default.

Layout facts (verified in tests/nets/test_lc0.py): our 4,288 policy layout *is* Lc0's attention
output; ``format.ATTN_TO_1858`` maps it onto the classic 1,858 list. One difference: Lc0 scores
castling on king-takes-rook (e1h1), we on the king's destination (e1g1). Imported nets get
``policy_castling="king_takes_rook"``, whose forward pass swaps those logits into our layout.

Anything else (canonical input formats, other activations, policy encoders, relative position
encodings) is refused with ``Lc0FormatError`` naming what was found; a file is fully decoded and
checked before a model is built, so a bad file never yields a partly loaded model.

The mapping interface (``lc0/__init__.py`` dispatches through it): ``BODY``, ``FAMILY``,
``decode(net, fmt, where) -> (config, state dict)``, ``export_problems(cfg, allow_castling_mismatch)``
and ``encode(model, encoding, moves_left, allow_castling_mismatch) -> schema.Net``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from pdx_lightning.nets.chessformer import Chessformer, ModelConfig
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

__all__ = [
    "BODY",
    "FAMILY",
    "decode",
    "encode",
    "export_problems",
    "lc0_style",
    "field_table",
    "lc0_tensors",
    "config_from_net",
]

BODY = "attention"
FAMILY = "chessformer"
_POLICY, _VALUE = "policy_heads.vanilla.", "value_heads.winner."  # where export writes the heads

# a field_table part: None (same layout), "T" (transposed) or (i, n) (the i-th of n row blocks)
Part = Literal["T"] | tuple[int, int] | None


def field_table(cfg: ModelConfig, pol: str, pol_embed: str, val: str) -> list[tuple[str, str, Part]]:
    """(net.proto path under ``weights``, state-dict key, part) for every tensor of ``cfg``.
    part: None (same layout), "T" (stored transposed: Lc0's gates are (d, 64)),
    or (i, n): the i-th of n row blocks (Q/K/V inside our fused ``qkv``).
    ``pol``/``pol_embed``/``val``: the path prefixes of the policy, policy embedding and value
    layers (``""`` in single-head files)."""
    t: list[tuple[str, str, Part]] = []
    add = lambda path, key, part=None: t.append((path, key, part))  # noqa: E731
    if cfg.input_dense:
        add("ip_emb_preproc_w", "input_dense.weight")
        add("ip_emb_preproc_b", "input_dense.bias")
    add("ip_emb_w", "embed.weight")
    add("ip_emb_b", "embed.bias")
    if cfg.embed_ln:
        add("ip_emb_ln_gammas", "embed_ln.weight")
        add("ip_emb_ln_betas", "embed_ln.bias")
    add("ip_mult_gate", "gate_mul", "T")
    add("ip_add_gate", "gate_add", "T")
    if cfg.embed_ffn_dim:
        for n, k in (
            ("dense1_w", "embed_ffn1.weight"),
            ("dense1_b", "embed_ffn1.bias"),
            ("dense2_w", "embed_ffn2.weight"),
            ("dense2_b", "embed_ffn2.bias"),
        ):
            add(f"ip_emb_ffn.{n}", k)
        add("ip_emb_ffn_ln_gammas", "embed_ln2.weight")
        add("ip_emb_ffn_ln_betas", "embed_ln2.bias")
    add("smolgen_w", "smolgen_shared.weight")
    for i in range(cfg.n_layers):
        e, k = f"encoder.{i}", f"layers.{i}"
        for j, c in enumerate("qkv"):
            add(f"{e}.mha.{c}_w", f"{k}.qkv.weight", (j, 3))
            add(f"{e}.mha.{c}_b", f"{k}.qkv.bias", (j, 3))
        add(f"{e}.mha.dense_w", f"{k}.out.weight")
        add(f"{e}.mha.dense_b", f"{k}.out.bias")
        for n, m in (
            ("compress", "compress.weight"),
            ("dense1_w", "dense1.weight"),
            ("dense1_b", "dense1.bias"),
            ("ln1_gammas", "ln1.weight"),
            ("ln1_betas", "ln1.bias"),
            ("dense2_w", "dense2.weight"),
            ("dense2_b", "dense2.bias"),
            ("ln2_gammas", "ln2.weight"),
            ("ln2_betas", "ln2.bias"),
        ):
            add(f"{e}.mha.smolgen.{n}", f"{k}.smolgen.{m}")
        for n, m in (
            ("ln1_gammas", "ln1.weight"),
            ("ln1_betas", "ln1.bias"),
            ("ffn.dense1_w", "ffn1.weight"),
            ("ffn.dense1_b", "ffn1.bias"),
            ("ffn.dense2_w", "ffn2.weight"),
            ("ffn.dense2_b", "ffn2.bias"),
            ("ln2_gammas", "ln2.weight"),
            ("ln2_betas", "ln2.bias"),
        ):
            add(f"{e}.{n}", f"{k}.{m}")
    add(f"{pol_embed}ip_pol_w", "policy_head.embed.weight")
    add(f"{pol_embed}ip_pol_b", "policy_head.embed.bias")
    for n, m in (
        ("ip2_pol_w", "wq.weight"),
        ("ip2_pol_b", "wq.bias"),
        ("ip3_pol_w", "wk.weight"),
        ("ip3_pol_b", "wk.bias"),
        ("ip4_pol_w", "promo.weight"),
    ):
        add(f"{pol}{n}", f"policy_head.{m}")
    for n, m in (
        ("ip_val_w", "embed.weight"),
        ("ip_val_b", "embed.bias"),
        ("ip1_val_w", "fc.weight"),
        ("ip1_val_b", "fc.bias"),
        ("ip2_val_w", "out.weight"),
        ("ip2_val_b", "out.bias"),
    ):
        add(f"{val}{n}", f"value_head.{m}")
    if cfg.moves_left_dim:
        for n, m in (
            ("ip_mov_w", "embed_weight"),
            ("ip_mov_b", "embed_bias"),
            ("ip1_mov_w", "fc1_weight"),
            ("ip1_mov_b", "fc1_bias"),
            ("ip2_mov_w", "fc2_weight"),
            ("ip2_mov_b", "fc2_bias"),
        ):
            add(n, f"moves_left_head.{m}")
    return t


# ---------------------------------------------------------------- reading


def config_from_net(net, fmt: NetFormat, where: str) -> tuple[ModelConfig, str, str, str]:
    """The Chessformer config of an attention-body net and its head prefixes (pol, pol_embed,
    val), or Lc0FormatError naming what cannot be mapped."""
    nf, w = net.format.network_format, net.weights
    problems = []
    if nf.input != P.INPUT_CLASSICAL_112_PLANE:
        problems.append(
            f"input format {enum_name(P.INPUT_NAMES, nf.input)} (encoding.py builds INPUT_CLASSICAL_112_PLANE only)"
        )
    if nf.policy != P.POLICY_ATTENTION:
        problems.append(f"policy format {enum_name(P.POLICY_NAMES, nf.policy)} (need POLICY_ATTENTION)")
    if nf.value != P.VALUE_WDL:
        problems.append(f"value format {enum_name(P.VALUE_NAMES, nf.value)} (need VALUE_WDL)")
    if nf.default_activation not in (P.DEFAULT_ACTIVATION_RELU, P.DEFAULT_ACTIVATION_MISH):
        problems.append(f"unknown default activation {nf.default_activation}")
    act: Literal["mish", "relu"] = "mish" if nf.default_activation == P.DEFAULT_ACTIVATION_MISH else "relu"
    act_fn = P.ACTIVATION_MISH if act == "mish" else P.ACTIVATION_RELU
    if nf.ffn_activation not in (P.ACTIVATION_DEFAULT, act_fn):
        problems.append(
            f"FFN activation {enum_name(P.ACTIVATION_NAMES, nf.ffn_activation)} differs from the "
            f"default {act} (the Chessformer uses one activation)"
        )
    if nf.smolgen_activation != P.ACTIVATION_SWISH:
        problems.append(f"smolgen activation {enum_name(P.ACTIVATION_NAMES, nf.smolgen_activation)} (need SWISH)")
    if not w.HasField("smolgen_w") or any(not e.mha.HasField("smolgen") for e in w.encoder):
        problems.append("encoders without smolgen")
    if len(w.pol_encoder) or len(w.policy_heads.vanilla.pol_encoder):
        problems.append("policy-head encoder layers")
    if any(e.mha.HasField(f) for e in w.encoder for f in ("rpe_q", "rpe_k", "rpe_v")):
        problems.append("relative position encodings (rpe_q/k/v)")
    if problems:
        raise Lc0FormatError(f"{where}: this Lc0 network cannot be mapped onto the Chessformer: " + "; ".join(problems))

    size = lambda path: layer_size(w, path, where)  # noqa: E731
    if w.policy_heads.vanilla.HasField("ip2_pol_b"):
        pol = _POLICY
        pol_embed = pol if w.policy_heads.vanilla.HasField("ip_pol_w") else "policy_heads."
    else:
        pol = pol_embed = ""
    val = _VALUE if w.value_heads.HasField("winner") else ""
    if nf.HasField("input_embedding") and nf.input_embedding not in P.EMBEDDING_NAMES:
        raise Lc0FormatError(f"{where}: unknown input embedding {nf.input_embedding}")
    # Files older than the input_embedding field are PE_MAP (T82), or PE_DENSE if they carry the
    # preprocessing layer; Lc0's backends treat INPUT_EMBEDDING_NONE like PE_MAP (112 + 64 inputs).
    dense = nf.input_embedding == P.INPUT_EMBEDDING_PE_DENSE or (
        not nf.HasField("input_embedding") and w.HasField("ip_emb_preproc_b")
    )
    d, heads = size("ip_emb_b"), w.headcount
    if heads <= 0 or d % heads:
        raise Lc0FormatError(f"{where}: headcount {heads} does not divide the embedding width {d}")
    if size("encoder.0.mha.q_b") != d:
        raise Lc0FormatError(
            f"{where}: attention width {size('encoder.0.mha.q_b')} differs from the "
            f"embedding width {d} (the Chessformer uses one width)"
        )
    if size(f"{val}ip1_val_b") != 128:
        raise Lc0FormatError(f"{where}: value head hidden width {size(f'{val}ip1_val_b')} (the Chessformer's is 128)")
    mlh = fmt.moves_left == P.MOVES_LEFT_V1
    try:
        cfg = ModelConfig(
            name=Path(where).name,
            embed_dim=d,
            n_layers=len(w.encoder),
            n_heads=heads,
            ffn_dim=size("encoder.0.ffn.dense1_b"),
            smolgen_compress=size("encoder.0.mha.smolgen.compress") // d,
            smolgen_hidden=size("encoder.0.mha.smolgen.dense1_b"),
            smolgen_gen=size("encoder.0.mha.smolgen.dense2_b") // heads,
            input_dense=size("ip_emb_preproc_b") // 64 if dense else 0,
            policy_dim=size(f"{pol}ip2_pol_b"),
            policy_embed_dim=size(f"{pol_embed}ip_pol_b"),
            value_dim=size(f"{val}ip_val_b"),
            value_pool="flatten",
            rule50_scale=1.0,
            activation=act,
            input_posenc=not dense,
            embed_ln=dense,
            embed_ffn_dim=size("ip_emb_ffn.dense1_b") if dense else 0,
            ln_eps=1e-3 if dense else 1e-6,
            smolgen_ln_eps=1e-3,
            deepnorm="scale_sublayer",
            promo_offsets_scaled=False,
            policy_castling="king_takes_rook",
            moves_left_dim=size("ip_mov_b") if mlh else 0,
            moves_left_hidden=size("ip1_mov_b") if mlh else 128,
        )
    except ValueError as e:
        raise Lc0FormatError(f"{where}: inconsistent layer sizes: {e}") from e
    if cfg.policy_embed_dim == cfg.policy_dim:
        cfg = replace(cfg, policy_embed_dim=0)
    return cfg, pol, pol_embed, val


def decode(net, fmt: NetFormat, where: str) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """An attention-body ``net`` → (Chessformer config, complete state dict), every tensor's
    size checked against the config (on the meta device) before it is reshaped."""
    cfg, pol, pol_embed, val = config_from_net(net, fmt, where)
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in Chessformer(cfg).state_dict().items()}
    parts: dict[str, list] = {}
    for lc0_path, key, part in field_table(cfg, pol, pol_embed, val):
        shape = shapes[key]
        if part == "T":
            shape = shape[::-1]
        elif part is not None:
            shape = (shape[0] // part[1],) + tuple(shape[1:])
        values = layer_values(net.weights, lc0_path, where, tuple(shape), key)  # size checked, then decoded
        if values.numel() != int(np.prod(shape)):
            raise Lc0FormatError(
                f"{where}: weights.{lc0_path} has {values.numel()} values, expected "
                f"{'×'.join(map(str, shape))} = {int(np.prod(shape))} for {key}"
            )
        values = values.reshape(shape)
        parts.setdefault(key, []).append(values.t().contiguous() if part == "T" else values)
    return cfg, {k: torch.cat(v) if len(v) > 1 else v[0] for k, v in parts.items()}


# ---------------------------------------------------------------- writing


def lc0_style(cfg: ModelConfig, embedding: str = "pe_dense") -> ModelConfig:
    """``cfg`` changed into what Lc0 can express: mish, flatten value head, DeepNorm on the
    sublayer, unscaled promotion offsets, king-takes-rook castling, and the embedding (and its
    LayerNorm eps) of a PE_DENSE (BT4) or PE_MAP (T82) network."""
    common: dict[str, Any] = dict(
        activation="mish",
        value_pool="flatten",
        deepnorm="scale_sublayer",
        promo_offsets_scaled=False,
        policy_castling="king_takes_rook",
        smolgen_ln_eps=1e-3,
    )
    if embedding == "pe_dense":
        return replace(
            cfg,
            input_dense=cfg.input_dense or 8,
            input_posenc=False,
            embed_ln=True,
            embed_ffn_dim=cfg.embed_ffn_dim or cfg.ffn_dim,
            ln_eps=1e-3,
            **common,
        )
    if embedding == "pe_map":
        return replace(cfg, input_dense=0, input_posenc=True, embed_ln=False, embed_ffn_dim=0, ln_eps=1e-6, **common)
    raise ValueError(f"embedding must be 'pe_dense' or 'pe_map', got {embedding!r}")


def export_problems(cfg: ModelConfig, allow_castling_mismatch: bool = False) -> list[str]:
    """Why ``cfg``'s computation has no exact Lc0 equivalent (empty: exportable)."""
    p = []
    if cfg.activation not in ("mish", "relu"):
        p.append(f"activation={cfg.activation!r}: Lc0's default activation is mish or relu")
    if cfg.value_pool != "flatten":
        p.append(f"value_pool={cfg.value_pool!r}: Lc0's value head flattens the 64 squares")
    if cfg.deepnorm != "scale_sublayer":
        p.append(
            f"deepnorm={cfg.deepnorm!r}: Lc0 computes LN(x + f(x)·(2N)^-¼); LN(α·x + f(x)) equals it "
            f"only with a LayerNorm eps Lc0 does not use"
        )
    if cfg.promo_offsets_scaled:
        p.append("promo_offsets_scaled=True: Lc0 adds promotion offsets unscaled")
    dense, posenc = cfg.input_dense > 0, cfg.input_posenc
    if dense == posenc:
        p.append(
            f"input embedding (input_dense={cfg.input_dense}, input_posenc={posenc}): Lc0 has either "
            f"the board preprocessing (PE_DENSE, input_dense > 0) or the square table (PE_MAP), "
            f"exactly one"
        )
    elif dense and not (cfg.embed_ln and cfg.embed_ffn_dim and cfg.ln_eps == 1e-3):
        p.append(
            f"PE_DENSE needs embed_ln=True, embed_ffn_dim > 0 and ln_eps=1e-3 (got {cfg.embed_ln}, "
            f"{cfg.embed_ffn_dim}, {cfg.ln_eps})"
        )
    elif posenc and (cfg.embed_ln or cfg.embed_ffn_dim or cfg.ln_eps != 1e-6):
        p.append(
            f"PE_MAP needs embed_ln=False, embed_ffn_dim=0 and ln_eps=1e-6 (got {cfg.embed_ln}, "
            f"{cfg.embed_ffn_dim}, {cfg.ln_eps})"
        )
    if cfg.smolgen_ln_eps != 1e-3:
        p.append(f"smolgen_ln_eps={cfg.smolgen_ln_eps}: Lc0's smolgen LayerNorms use 1e-3")
    if cfg.policy_castling != "king_takes_rook" and not allow_castling_mismatch:
        p.append(
            "policy_castling='king_to': the network scores castling on e1g1, Lc0 reads it on e1h1 "
            "(pass --allow-castling-mismatch to export anyway)"
        )
    return p


def lc0_tensors(model: Chessformer, cfg: ModelConfig, pol: str, pol_embed: str, val: str) -> dict[str, torch.Tensor]:
    """``model``'s tensors in Lc0's storage layout, by net.proto path (``cfg`` may drop the MLH)."""
    state = {k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()}
    if cfg.rule50_scale != 1.0:  # Lc0 feeds the raw count: fold our input scaling into the weights
        w = state["embed.weight"].clone()
        w[:, 109] *= cfg.rule50_scale
        state["embed.weight"] = w
    out = {}
    for lc0_path, key, part in field_table(cfg, pol, pol_embed, val):
        t = state[key]
        if part == "T":
            t = t.t()
        elif part is not None:
            t = t.chunk(part[1])[part[0]]
        out[lc0_path] = t.contiguous()
    return out


def encode(model: Chessformer, encoding: int, moves_left: bool = True, allow_castling_mismatch: bool = False):
    """``model`` as a ``schema.Net`` (multi-head attention-body format), every layer in
    ``encoding``; Lc0ExportError listing what Lc0 cannot express. ``moves_left=False`` drops a
    carried moves-left head."""
    cfg = model.cfg
    problems = export_problems(cfg, allow_castling_mismatch)
    if problems:
        raise Lc0ExportError("the network cannot be written in Lc0's format:\n  - " + "\n  - ".join(problems))
    if not moves_left and cfg.moves_left_dim:
        cfg = replace(cfg, moves_left_dim=0)
    net = P.Net(magic=P.MAGIC)
    net.min_version.major, net.min_version.minor, net.min_version.patch = 0, 30, 0
    net.format.weights_encoding = P.LINEAR16  # each Layer carries its own encoding, which overrides this
    nf = net.format.network_format
    nf.input, nf.output = P.INPUT_CLASSICAL_112_PLANE, P.OUTPUT_WDL
    nf.network = P.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT
    nf.policy, nf.value = P.POLICY_ATTENTION, P.VALUE_WDL
    nf.moves_left = P.MOVES_LEFT_V1 if cfg.moves_left_dim else P.MOVES_LEFT_NONE
    nf.default_activation = P.DEFAULT_ACTIVATION_MISH if cfg.activation == "mish" else P.DEFAULT_ACTIVATION_RELU
    nf.smolgen_activation, nf.ffn_activation = P.ACTIVATION_SWISH, P.ACTIVATION_DEFAULT
    nf.input_embedding = P.INPUT_EMBEDDING_PE_DENSE if cfg.input_dense else P.INPUT_EMBEDDING_PE_MAP
    w = net.weights
    w.headcount = cfg.n_heads
    for _ in range(cfg.n_layers):
        w.encoder.add()
    for lc0_path, t in lc0_tensors(model, cfg, _POLICY, _POLICY, _VALUE).items():
        resolve(w, lc0_path, create=True).CopyFrom(encode_layer(t, encoding))
    return net
