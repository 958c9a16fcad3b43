"""``pdx export network``: write any loadable network, or a blend of two, as a pdx ``.pt`` network file.

The ``.pt`` form of ``pdx export lc0`` (same ``--model``/``--blend``/``--alpha``/``--weights``): for
every family, including networks Lc0 cannot express (the CPU presets, ``base:small``), and lossless.
The file records the blend in its ``meta`` and loads wherever a model name is taken (``pdx arena``,
``--model.base``, ``pdx eval ...``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pdx_lightning.nets.blend import NetworkBlendError
from pdx_lightning.nets.bundled import DATA_DIR
from pdx_lightning.nets.export_cli import add_source_arguments, load_source, source_meta
from pdx_lightning.nets.files import ModelLoadError, save_network
from pdx_lightning.nets.temper import PolicyTemperatureError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--out", required=True, help="output network file, e.g. blend_0.5.pt")


def run(args: argparse.Namespace) -> int:
    what = args.model if args.blend is None else f"{args.model} + {args.blend}"
    try:
        if Path(args.out).resolve().parent == DATA_DIR.resolve() and Path(args.out).name.startswith("base_"):
            raise NetworkBlendError(f"--out {args.out} would overwrite a bundled network; choose another path")
        model, what = load_source(args)
        save_network(model, args.out, meta=source_meta(args))
    except (ModelLoadError, NetworkBlendError, PolicyTemperatureError) as e:
        print(f"pdx export network: {what}: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    print(
        f"wrote {out} ({out.stat().st_size:,} bytes, {sum(p.numel() for p in model.parameters()):,} parameters): {what}"
    )
    return 0
