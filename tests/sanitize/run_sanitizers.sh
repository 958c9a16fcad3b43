#!/usr/bin/env bash
# The compiled chess core under sanitizers (issue 37): builds pdx_lightning/chesscore/*.c as a shared
# library with AddressSanitizer + UndefinedBehaviorSanitizer (-fno-sanitize-recover=all: the first finding
# aborts) and, separately, with ThreadSanitizer, and runs the core's tests against each build: perft and
# move-by-move equality with python-chess, the pools on worker threads, the bad-input and error-code tests
# (their fault-injection build sanitized too) and the differential fuzzer. native_core.py loads the build
# named by $PDX_CORE_LIB; the sanitizer runtime is preloaded into the (uninstrumented) Python interpreter
# (ASAN_OPTIONS=detect_leaks=0: the interpreter's own allocations are not the core's). First each build must
# catch a bug planted past Python's checks (a heap overflow, a race on one game), so a silent runtime fails.
#
#   tests/sanitize/run_sanitizers.sh [asan|tsan|all] [FUZZ_POSITIONS]       (default: all 20000)
#
# Exit 0: no finding and every test passed. Run with `nice -n 19` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
CC=${CC:-gcc}
WHICH=${1:-all}
FUZZ=${2:-20000}
SRC=(pdx_lightning/chesscore/*.c)   # the core's C files
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pdx-sanitize.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS=1
export PDX_SLOW_TEST_CPU_S=${PDX_SLOW_TEST_CPU_S:-1000}   # sanitized runs are slow by design: no budget notes
CORE_TESTS=(tests/chesscore/test_native_core.py tests/chesscore/test_game_pool.py
            tests/chesscore/test_core_boundary.py tests/chesscore/test_core_codes.py tests/chesscore/test_fuzz_core.py)
THREAD_TESTS=(tests/chesscore/test_game_pool.py tests/chesscore/test_fuzz_core.py)

runtime() {   # the sanitizer's shared runtime, then libstdc++ (the runtime's C++ interceptors, e.g. __cxa_throw,
              # need it loaded at start: Python is C, and pybind11 modules such as matplotlib's throw)
  local rt cxx
  rt=$("$CC" -print-file-name="$1")
  cxx=$("$CC" -print-file-name=libstdc++.so.6)
  for f in "$rt" "$cxx"; do
    if [ ! -e "$f" ]; then echo "run_sanitizers: $CC has no $(basename "$f") (install its sanitizer runtime)" >&2; exit 2; fi
  done
  echo "$rt $cxx"
}

build() {   # build NAME FLAGS...: the core and its fault-injection build
  "$CC" -std=c99 -O1 -g -fno-omit-frame-pointer -fPIC -shared "${@:2}" "${SRC[@]}" -o "$OUT/$1.so"
  "$CC" -std=c99 -O1 -g -fno-omit-frame-pointer -fPIC -shared -DPDX_FAULTS "${@:2}" "${SRC[@]}" -o "$OUT/$1_faults.so"
}

run() {   # run NAME PRELOAD TESTS...: the tests and the fuzzer CLI against build NAME
  local name=$1 rt=$2
  shift 2
  echo "== $name: pytest $* =="
  PDX_CORE_LIB="$OUT/$name.so" PDX_CORE_FAULTS_LIB="$OUT/${name}_faults.so" LD_PRELOAD="$rt" \
    "$PY" -m pytest -p no:cacheprovider -q "$@"
  echo "== $name: fuzz_core.py --positions $FUZZ --seed 11 =="
  PDX_CORE_LIB="$OUT/$name.so" LD_PRELOAD="$rt" "$PY" tests/chesscore/fuzz_core.py --positions "$FUZZ" --seed 11
}

# planted bugs, past Python's checks (the sanitizer must catch each, else it is not live)
OVERFLOW='
import numpy as np
from pdx_lightning.chesscore import native_core
core = native_core.NativeCore(1)
small, one = np.empty((1, 4), np.int64), np.zeros(1, np.int32)
core.lib.pdx_core_legal(core._h, 1, one.ctypes.data, None, small.ctypes.data, one.ctypes.data, one.ctypes.data)'
RACE='
import threading
from pdx_lightning.chesscore import native_core
core = native_core.NativeCore(1)
moves = [12 | 28 << 6, 52 | 36 << 6, 6 | 21 << 6, 62 | 45 << 6, 21 | 6 << 6, 45 | 62 << 6]
start = threading.Barrier(2)
def play():
    start.wait()  # both threads in their loops together: the race needs the two calls to overlap
    for _ in range(200):
        for m in moves:
            core.lib.pdx_core_push_move(core._h, 0, m)
threads = [threading.Thread(target=play) for _ in range(2)]
for t in threads: t.start()
for t in threads: t.join()'

canary() {   # canary NAME PRELOAD REPORT CODE [TRIES]
  # a race is caught only when the two threads' calls overlap (the GIL orders them otherwise), which a
  # loaded machine may not schedule in one run: the race canary gets TRIES runs, the overflow one
  local tries=${5:-1} i
  for ((i = 1; i <= tries; i++)); do
    if ! (PDX_CORE_LIB="$OUT/$1.so" LD_PRELOAD="$2" "$PY" -c "$4"; exit $?) >"$OUT/canary.log" 2>&1; then
      break
    fi
    if ((i == tries)); then
      echo "run_sanitizers: $1 did not catch the planted bug in $tries run(s)" >&2; exit 1
    fi
  done
  if ! grep -q "$3" "$OUT/canary.log"; then
    echo "run_sanitizers: the planted bug failed without a $1 report:" >&2; tail -20 "$OUT/canary.log" >&2; exit 1
  fi
  echo "== $1: the planted bug was caught ($3) =="
}

if [ "$WHICH" = asan ] || [ "$WHICH" = all ]; then
  build asan -fsanitize=address,undefined -fno-sanitize-recover=all
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  canary asan "$(runtime libasan.so)" "heap-buffer-overflow" "$OVERFLOW"
  run asan "$(runtime libasan.so)" "${CORE_TESTS[@]}"
fi
if [ "$WHICH" = tsan ] || [ "$WHICH" = all ]; then
  build tsan -fsanitize=thread
  export TSAN_OPTIONS=halt_on_error=1:abort_on_error=1
  canary tsan "$(runtime libtsan.so)" "ThreadSanitizer: data race" "$RACE" 5
  run tsan "$(runtime libtsan.so)" "${THREAD_TESTS[@]}"
fi
echo "run_sanitizers: no finding"
