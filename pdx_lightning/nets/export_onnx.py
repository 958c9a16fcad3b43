"""``pdx export onnx``: write any loadable network, or a blend of two, as ONNX with Lc0's interface.

The file has the input and outputs of Lc0's own converter (``lc0 leela2onnx``), so whatever serves an
Lc0 ONNX network serves it (Lc0's ONNX backends after ``lc0 onnx2leela``, onnxruntime, onnxruntime-web).
Names, shapes and what each output holds come from Lc0's source (LeelaChessZero/lc0, read at 909a408,
2026; GPL-3.0, read, not copied): the default node names from ``src/tools/leela2onnx.cc`` and
``src/neural/onnx/converter.h`` (``WeightsToOnnxConverterOptions``); the outputs from
``src/neural/onnx/converter.cc`` (``MakePolicyHead``, ``MakeValueHead``, ``MakeMovesLeftHead``,
``GenerateOnnx``); a dimension of size -1 is named ``batch`` in ``src/neural/onnx/builder.cc``
(``FillValueInfo``):

=================  ==================  =====================================================================
name               shape (float32)     holds
=================  ==================  =====================================================================
``/input/planes``  (batch, 112, 8, 8)  Lc0's classic 112 planes, as ``encode_boards`` makes them (side to
                                       move's frame; the rule-50 plane 109 is the raw ply count, as Lc0
                                       feeds it)
``/output/policy`` (batch, 1858)       raw policy logits in Lc0's 1,858-move order (``lc0_1858_moves``),
                                       castling on king-takes-rook (e1h1, e1a1), no softmax
``/output/wdl``    (batch, 3)          win/draw/loss probabilities of the side to move: the softmax is in
                                       the graph, as in Lc0's converter (``MakeValueHead``)
``/output/value``  (batch, 1)          instead of ``/output/wdl`` for a classical-value network
                                       (VALUE_CLASSICAL): q = W − L = tanh(v), as Lc0 writes it
``/output/mlh``    (batch, 1)          moves left in plies, when the network carries a moves-left head
                                       (``--no-moves-left`` drops it)
=================  ==================  =====================================================================

The batch dimension is dynamic. The default opset is 17, leela2onnx's default. The graph wraps the
network's own forward (``Lc0OnnxInterface``): its 4,288-logit policy is swapped back to Lc0's castling
slots and gathered onto the 1,858 moves, so both families, and networks Lc0's own format cannot express
(``random:small``, ``base:small``), export the same way.

It uses PyTorch's TorchScript exporter (``torch.onnx.export(..., dynamo=False)``), not the
``torch.export``-based default: with torch 2.13 the latter fails on the Chessformer's attention with a
symbolic batch ("Cannot view a tensor with shape [s77, 64, 2, 16] ... as (s77, 64, 32)"), wrote opset 18
for the residual tower when asked for 17 (its version converter failed), and needs onnxscript besides.

The file is verified before it is written: onnxruntime runs it on ``check`` positions (the bundled
openings, with their move history) against the torch network; a policy logit or a W/D/L probability
(or q, or moves-left) further than ``tolerance`` apart, or a different best legal move, refuses the
export and nothing is written. Needs ``pip install 'pdx_lightning[onnx]'`` (onnx, onnxruntime).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import chess
import numpy as np
import torch
from torch import nn

from pdx_lightning import argtypes
from pdx_lightning._version import __version__
from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import legal_mask
from pdx_lightning.errors import UserError
from pdx_lightning.files.atomicfile import atomic_write
from pdx_lightning.nets.blend import NetworkBlendError
from pdx_lightning.nets.export_cli import add_source_arguments, load_source, source_meta
from pdx_lightning.nets.lc0_policy import castling_to_ours, policy_from_1858, policy_to_1858

__all__ = [
    "INPUT",
    "POLICY",
    "WDL",
    "VALUE",
    "MLH",
    "DEFAULT_OPSET",
    "OnnxExportError",
    "OnnxParity",
    "Lc0OnnxInterface",
    "onnx_model_bytes",
    "onnx_parity",
    "check_positions",
    "export_onnx",
]

# Lc0's node names (src/neural/onnx/converter.h, WeightsToOnnxConverterOptions; leela2onnx's defaults).
INPUT = "/input/planes"
POLICY = "/output/policy"
WDL = "/output/wdl"
VALUE = "/output/value"
MLH = "/output/mlh"
BATCH = "batch"  # the dynamic dimension's name (src/neural/onnx/builder.cc, FillValueInfo)
DEFAULT_OPSET = 17  # leela2onnx --onnx-opset default
OPSETS = range(14, 21)  # what the TorchScript exporter writes with these ops (LayerNorm, SDPA, Mish)
MAX_BYTES = 2**31 - 2**26  # one ONNX file is one protobuf message (2 GiB), less room for the graph
EXTRA_HINT = "pip install 'pdx_lightning[onnx]' (onnx and onnxruntime)"


class OnnxExportError(UserError, ValueError):
    """A network, file name or option ``pdx export onnx`` cannot honour; nothing was written."""


class Lc0OnnxInterface(nn.Module):
    """A pdx network behind Lc0's ONNX interface (module docstring): planes → (policy 1858 logits,
    W/D/L probabilities or q[, moves left]). Any family of the network seam."""

    def __init__(self, net: nn.Module, moves_left: bool = True) -> None:
        super().__init__()
        self.net = net
        self.wdl_head = bool(getattr(net.cfg, "wdl_head", True))
        self.moves_left = bool(moves_left and getattr(net, "moves_left_head", None) is not None)

    def output_names(self) -> list[str]:
        return [POLICY, WDL if self.wdl_head else VALUE] + ([MLH] if self.moves_left else [])

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.net(planes)
        # our layout scores castling on the king's destination; Lc0's on king-takes-rook (an involution)
        policy = policy_to_1858(castling_to_ours(out.policy, planes))  # (B, 1858) logits
        wdl = torch.softmax(out.wdl, dim=-1)  # (B, 3) probabilities
        value = wdl if self.wdl_head else wdl[:, :1] - wdl[:, 2:]  # (B, 3) or q (B, 1)
        if not self.moves_left:
            return policy, value
        moves_left = cast(Callable[[torch.Tensor], torch.Tensor], self.net.moves_left)  # a pdx network's method
        return policy, value, moves_left(planes)[:, None]  # (B, 1) plies


def _require(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise OnnxExportError(f"the ONNX export needs the package {module!r}: {EXTRA_HINT}") from None


def _param_bytes(model: nn.Module) -> int:
    return sum(t.numel() * 4 for t in list(model.parameters()) + list(model.buffers()) if t.is_floating_point())


def onnx_model_bytes(
    model: nn.Module, opset: int = DEFAULT_OPSET, moves_left: bool = True, meta: dict | None = None
) -> bytes:
    """The ONNX model (float32, Lc0's interface, dynamic batch) of ``model``, serialized.

    ``meta`` (str → JSON-able) is stored in the model's ``metadata_props`` beside the network's family
    and config. Raises :class:`OnnxExportError` for what cannot be exported (one line each)."""
    onnx = _require("onnx")
    if opset not in OPSETS:
        raise OnnxExportError(
            f"--opset {opset}: pdx writes opsets {OPSETS.start}..{OPSETS.stop - 1} (Lc0's default is {DEFAULT_OPSET})"
        )
    cfg = getattr(model, "cfg", None)
    if cfg is None or not hasattr(cfg, "to_dict"):
        raise OnnxExportError(f"a {type(model).__name__} is not a pdx network (no cfg with to_dict())")
    size = _param_bytes(model)
    if size > MAX_BYTES:
        raise OnnxExportError(
            f"the network holds {size / 2**30:.2f} GiB of float32 weights; one ONNX file "
            f"holds under 2 GiB and pdx does not write ONNX external-data files"
        )
    graph = Lc0OnnxInterface(model, moves_left).eval()
    names = graph.output_names()
    dummy = torch.zeros(2, 112, 8, 8)
    buf = io.BytesIO()
    try:
        # no_grad: the residual tower then traces its inference path (resnet.py: the same computation,
        # only the 73 policy planes Lc0 reads), a leaner graph than the module path
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the exporter's deprecation and tracer notes, not the user's
            torch.onnx.export(
                graph,
                (dummy,),
                buf,  # type: ignore[arg-type]  # the TorchScript exporter (dynamo=False) writes to a file-like object too; torch annotates f as a path
                dynamo=False,
                opset_version=opset,
                input_names=[INPUT],
                output_names=names,
                dynamic_axes={n: {0: BATCH} for n in [INPUT, *names]},
                do_constant_folding=True,
            )
    except Exception as e:  # the exporter raises many types; the user gets one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise OnnxExportError(
            f"the {getattr(cfg, 'family', '?')} network could not be traced to ONNX "
            f"(opset {opset}): {type(e).__name__}: {first}"
        ) from e
    proto = onnx.load_from_string(buf.getvalue())
    proto.producer_name, proto.producer_version = "pdx_lightning", __version__
    proto.doc_string = (
        "pdx_lightning network with Lc0's ONNX interface (lc0 leela2onnx names): "
        f"{INPUT} (batch,112,8,8) -> {', '.join(names)}"
    )
    props = {
        "pdx.family": getattr(cfg, "family", ""),
        "pdx.config": json.dumps(cfg.to_dict(), sort_keys=True),
        "lc0.input_format": "INPUT_CLASSICAL_112_PLANE",
        "lc0.input_planes": INPUT,
        "lc0.output_policy": POLICY,
        ("lc0.output_wdl" if graph.wdl_head else "lc0.output_value"): names[1],
        **({"lc0.output_mlh": MLH} if graph.moves_left else {}),
        **{f"pdx.{k}": v if isinstance(v, str) else json.dumps(v) for k, v in (meta or {}).items()},
    }
    for k, v in props.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


# ---------------------------------------------------------------- verification


@dataclass(frozen=True)
class OnnxParity:
    """onnxruntime against the torch network on ``n`` positions (float32)."""

    n: int
    max_policy: float  # max |Δ| over every one of the 1,858 logits
    max_value: float  # max |Δ| of the W/D/L probabilities (or of q)
    max_mlh: float | None  # max |Δ| of moves left (plies), if the file has that output
    argmax_same: int  # positions whose best legal move is the same
    argmax_close: int  # of the others: torch's best two legal logits within 2·max_policy (a tie)
    outputs: tuple[str, ...]

    def ok(self, tolerance: float) -> bool:
        worst = max(self.max_policy, self.max_value, self.max_mlh or 0.0)
        return worst <= tolerance and self.argmax_same + self.argmax_close == self.n

    def summary(self) -> str:
        mlh = "" if self.max_mlh is None else f", moves left {self.max_mlh:.2g}"
        close = f" (+{self.argmax_close} ties)" if self.argmax_close else ""
        return (
            f"onnxruntime vs torch on {self.n} positions: max |Δ| policy logits {self.max_policy:.2g}, "
            f"{'W/D/L' if WDL in self.outputs else 'q'} {self.max_value:.2g}{mlh}; best legal move "
            f"identical {self.argmax_same}/{self.n}{close}"
        )


def check_positions(n: int) -> list[chess.Board]:
    """``n`` positions with their move history: the bundled openings' end positions, then the positions
    one ply earlier on every line, two plies earlier, ... (at most ~2,600)."""
    from pdx_lightning.chesscore.opening_files import load_openings  # noqa: PLC0415

    boards = [o.start() for o in load_openings()]
    out: list[chess.Board] = []
    while len(out) < n and boards:
        out += boards[: n - len(out)]
        boards = [b for b in (b.copy() for b in boards) if b.move_stack]
        for b in boards:
            b.pop()
    return out


def _session(data: bytes | str | os.PathLike):
    ort = _require("onnxruntime")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, torch.get_num_threads())
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(
        data if isinstance(data, bytes) else str(data), sess_options=opts, providers=["CPUExecutionProvider"]
    )


def onnx_parity(
    model: nn.Module, data: bytes | str | os.PathLike, boards: Sequence[chess.Board], batch: int = 64
) -> OnnxParity:
    """Run the ONNX model ``data`` (bytes or a file) with onnxruntime and the torch ``model`` on
    ``boards``; compare every output (the torch side through :class:`Lc0OnnxInterface`, which is the
    same mapping the file was made from) and the best legal move."""
    sess = _session(data)
    names = tuple(o.name for o in sess.get_outputs())
    ref_graph = Lc0OnnxInterface(model, moves_left=MLH in names).eval()
    worst = {POLICY: 0.0, "value": 0.0, MLH: 0.0}
    same = close = 0
    for i in range(0, len(boards), batch):
        chunk = boards[i : i + batch]
        x = torch.from_numpy(encode_boards(chunk))
        with torch.inference_mode():
            ref = [t.float().numpy() for t in ref_graph(x)]
            ours = model(x).policy.float()
        got = dict(zip(names, sess.run(None, {INPUT: x.numpy()})))
        worst[POLICY] = max(worst[POLICY], float(np.abs(got[POLICY] - ref[0]).max()))
        worst["value"] = max(worst["value"], float(np.abs(got[names[1]] - ref[1]).max()))
        if MLH in got:
            worst[MLH] = max(worst[MLH], float(np.abs(got[MLH] - ref[2]).max()))
        # best legal move, in our layout: the file's logits back through the inverse maps
        mask = legal_mask(chunk)
        back = castling_to_ours(policy_from_1858(torch.from_numpy(got[POLICY]), fill=float("-inf")), x)
        a = back.masked_fill(~mask, float("-inf")).argmax(1)
        b = ours.masked_fill(~mask, float("-inf"))
        same_here = a == b.argmax(1)
        top2 = b.topk(2, dim=1).values
        tie = (top2[:, 0] - top2[:, 1]) <= 2 * max(worst[POLICY], 1e-7)
        same += int(same_here.sum())
        close += int((~same_here & tie).sum())
    return OnnxParity(
        len(boards), worst[POLICY], worst["value"], worst[MLH] if MLH in names else None, same, close, names
    )


def export_onnx(
    model: nn.Module,
    path: str | os.PathLike,
    opset: int = DEFAULT_OPSET,
    moves_left: bool = True,
    check: int = 64,
    tolerance: float = 1e-4,
    meta: dict | None = None,
) -> tuple[Path, OnnxParity | None]:
    """Write ``model`` as ONNX with Lc0's interface (module docstring) to ``path``, atomically.

    ``check`` positions (0: none) are run through onnxruntime first; a disagreement with the torch network
    beyond ``tolerance`` raises :class:`OnnxExportError` and nothing is written."""
    if check < 0:
        raise OnnxExportError(f"--check must be >= 0 positions, got {check}")
    if not tolerance > 0:
        raise OnnxExportError(f"--tolerance must be > 0, got {tolerance}")
    data = onnx_model_bytes(model, opset=opset, moves_left=moves_left, meta=meta)
    parity = None
    if check:
        parity = onnx_parity(model, data, check_positions(check))
        if not parity.ok(tolerance):
            raise OnnxExportError(
                f"{parity.summary()}: beyond --tolerance {tolerance:g}; nothing written "
                f"(a pdx bug: please report it with the model)"
            )
    path = Path(path)
    with atomic_write(path) as f:
        f.write(data)
    return path, parity


# ---------------------------------------------------------------- the command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write a network (or a blend of two) as ONNX with the input and outputs of Lc0's `lc0 leela2onnx`: "
        f"{INPUT} (batch, 112, 8, 8) -> {POLICY} (batch, 1858; raw logits, Lc0's move order), {WDL} "
        f"(batch, 3; probabilities) [or {VALUE} for a classical-value net] [, {MLH} (batch, 1)]; dynamic "
        "batch, float32. onnxruntime checks the file against the torch network before it is written. "
        "Lc0 runs it after `lc0 onnx2leela --input=F.onnx --output=F.pb.gz --onnx-input=/input/planes "
        "--onnx-output-policy=/output/policy --onnx-output-wdl=/output/wdl` on a build with an ONNX backend. "
        f"Needs {EXTRA_HINT}."
    )
    add_source_arguments(parser)
    parser.add_argument("--out", required=True, help="output file, e.g. net.onnx (must end in .onnx)")
    parser.add_argument(
        "--opset",
        type=argtypes.int_in(OPSETS.start, OPSETS.stop - 1),
        default=DEFAULT_OPSET,
        help=f"ONNX opset, {OPSETS.start}..{OPSETS.stop - 1} (Lc0's leela2onnx default: 17)",
    )
    parser.add_argument("--no-moves-left", action="store_true", help=f"leave out {MLH} of a moves-left head")
    parser.add_argument(
        "--check",
        type=argtypes.nonnegative_int,
        default=64,
        metavar="N",
        help="positions (bundled openings with history) onnxruntime must agree on with the "
        "torch network before anything is written; 0 skips the check",
    )
    parser.add_argument(
        "--tolerance",
        type=argtypes.positive_float,
        default=1e-4,
        help="largest |difference| of a policy logit, W/D/L probability or moves-left value the check accepts",
    )


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    what = args.model if args.blend is None else f"{args.model} + {args.blend}"
    if out.suffix.lower() != ".onnx":
        raise OnnxExportError(f"--out {args.out}: an ONNX file name ends in .onnx")
    if Path(args.model).exists() and out.resolve() == Path(args.model).resolve():
        raise OnnxExportError(f"--out {args.out} is the --model file itself; choose another path")
    _require("onnx")
    if args.check:
        _require("onnxruntime")
    try:
        model, what = load_source(args)
    except NetworkBlendError as e:  # name both networks (a load error names its model itself)
        raise NetworkBlendError(f"{what}: {e}") from e
    meta = source_meta(args)
    try:
        path, parity = export_onnx(
            model,
            out,
            opset=args.opset,
            moves_left=not args.no_moves_left,
            check=args.check,
            tolerance=args.tolerance,
            meta=meta,
        )
    except OnnxExportError as e:
        raise OnnxExportError(f"{what}: {e}") from e
    graph = Lc0OnnxInterface(model, moves_left=not args.no_moves_left)
    print(
        f"wrote {path} ({path.stat().st_size:,} bytes, opset {args.opset}, "
        f"{sum(p.numel() for p in model.parameters()):,} parameters; {INPUT} -> "
        f"{', '.join(graph.output_names())}): {what}"
    )
    print(parity.summary() if parity else "not checked (--check 0)")
    return 0
