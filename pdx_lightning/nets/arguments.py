"""The network flags of the command-line tools, written once: ``--model``, ``--weights``, ``--micro-batch``
and ``--device`` (``pdx eval *``, ``pdx arena``, ``pdx export *``). ``pdx uci`` keeps its own ``--model``:
importing ``pdx_lightning.nets`` loads torch, which the engine loads off its protocol thread.

Each tool names its models in its own words (``model_help``) and takes the flags it needs; the defaults,
choices and dest names are the same everywhere: ``args.model`` (a list when repeatable), ``args.weights``
(``load_model``'s ``weights``), ``args.micro_batch`` (``inference.evaluate``'s) and ``args.device``
(``inference.device_of``'s spec).
"""

from __future__ import annotations

import argparse

from pdx_lightning import argtypes

WEIGHTS = ("ema", "online")
SCORE_WEIGHTS_HELP = "which weights of a Lightning checkpoint to score"
AUTO_DEVICE_HELP = "torch device (default: cuda if available, else cpu)"


def add_network_arguments(
    parser: argparse.ArgumentParser,
    model_help: str,
    *,
    repeat: bool = True,
    weights_help: str | None = SCORE_WEIGHTS_HELP,
    micro_batch: bool = True,
    device: str | None = "auto",
    device_help: str = AUTO_DEVICE_HELP,
) -> None:
    """Add ``--model`` (required; ``repeat``: ``action="append"``), then ``--weights`` (``ema``|``online``,
    default ``ema``; None ``weights_help``: no flag), ``--micro-batch`` (positions per network call,
    default 512; ``micro_batch=False``: no flag) and ``--device`` (default ``device``; None: no flag)."""
    parser.add_argument("--model", action="append" if repeat else "store", required=True, help=model_help)
    if weights_help is not None:
        parser.add_argument("--weights", choices=WEIGHTS, default="ema", help=weights_help)
    if micro_batch:
        parser.add_argument(
            "--micro-batch", type=argtypes.int_in(1, 65_536), default=512, help="positions per network call"
        )
    if device is not None:
        parser.add_argument("--device", default=device, help=device_help)
