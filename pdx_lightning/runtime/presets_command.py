"""``pdx config list|show``: the config presets shipped with the package (``conf/`` as package data).

``pdx config show fit/maia > my.yaml`` copies a preset out to edit; ``pdx fit --config pdx:fit/maia``
runs it as shipped (:mod:`pdx_lightning.files.resources`). Both work from any directory of an installed
wheel: no checkout needed.
"""

from __future__ import annotations

import argparse
import sys

from pdx_lightning.files.resources import PRESET_PREFIX, preset_names, preset_path

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    if p.prog.endswith(" show"):
        p.add_argument(
            "preset",
            help="preset name as `pdx config list` prints it (fit/maia, sweep/cpu; "
            f"'{PRESET_PREFIX}fit/maia' and 'conf/fit/maia.yaml' also work)",
        )
    else:
        p.add_argument("--paths", action="store_true", help="print each preset's installed file too")


def run(args: argparse.Namespace) -> int:
    if getattr(args, "preset", None) is not None:
        sys.stdout.write(preset_path(args.preset).read_text())
        return 0
    for name in preset_names():
        print(f"{PRESET_PREFIX}{name}" + (f"\t{preset_path(name)}" if args.paths else ""))
    return 0
