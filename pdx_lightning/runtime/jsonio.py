"""JSON documents of the tools: NaN/inf become ``null`` (strict JSON), numpy values plain Python.

One cleaner for every writer (``pdx eval ... --json``, the arena, the sweep's records).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from pdx_lightning.files.atomicfile import atomic_write


def json_safe(x: Any) -> Any:
    """``x`` made strict-JSON-safe, recursively: NaN/inf → None, numpy scalars and arrays → Python,
    tuples → lists, mapping keys → str."""
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, np.ndarray):
        return json_safe(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def dumps(doc: Any, indent: int | None = None) -> str:
    """``json.dumps`` of :func:`json_safe` (``allow_nan=False``: a stray NaN fails here, not in a reader)."""
    return json.dumps(json_safe(doc), indent=indent, allow_nan=False)


def write_json(path: str | os.PathLike, doc: Any, indent: int | None = None, quiet: bool = False) -> None:
    """Write ``doc`` to ``path`` as strict JSON (:func:`dumps`); prints ``wrote PATH`` unless ``quiet``."""
    text = dumps(doc, indent)  # before the file is touched: a document that fails leaves the old one
    with atomic_write(path, "w") as f:
        f.write(text)
    if not quiet:
        print(f"wrote {path}")
