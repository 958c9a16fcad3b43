#!/bin/bash
# Searched strength and absolute scale of Maia-1900 and its fine-tuned cells: the stages of this report
# that need a shell. Its matches are one declarative list, matches.yaml, played by `pdx matches` (each
# match once, resumable, `--shard K/N`, `save` for another machine); this script trains and exports the
# networks they play, scores the value heads, and then plays the list. Run from a worktree at a fixed
# commit, with its .venv (setup.sh installs the real Lc0 v0.31 from ../shared/lc0 as .venv/bin/lc0) and
# Stockfish on PATH; one thread for every network and engine. Resumable: a cell whose final.ckpt exists
# is not retrained, an export whose .pb.gz exists is not redone, a record that exists is not made again.
#
#   bash reports/beyond_paper/run.sh [cells|value|valuemove|temperature|matches|all] ...  (default: all)
#   ONLY="fwd_s3 none_s0" bash reports/beyond_paper/run.sh cells      # only these cells (labels below)
#   B1024=1 bash reports/beyond_paper/run.sh cells                     # add the 1,024-game cells (~2 h each)
#   DRY=1 bash reports/beyond_paper/run.sh                             # print the commands, run nothing
#   VENV=/path/to/.venv SHARED=/path/to/shared bash reports/beyond_paper/run.sh   # other locations
# The matches alone, as `pdx matches` plays them (what is done, a match's shards on two cores, saving):
#   pdx matches status reports/beyond_paper/matches.yaml
#   pdx matches run reports/beyond_paper/matches.yaml --only 'lc0_n64_rev_s3' --shard 1/2 &   # and 2/2
#   pdx matches save reports/beyond_paper/matches.yaml   # unfinished matches' games into records/partial/
#
# 1. cells: the checkpoints of the committed cells were not kept, so each is retrained from its sweep
#    config (train + score, `pdx sweep --only CELL --no-stages`) and compared with its committed records
#    (same_cell.py: the final training metrics exactly, every suite's per-puzzle outcome exactly or within
#    float noise: SAME, SAME_TRAINING_EVAL_FLOAT_NOISE or DIFFERS); the verdict is kept
#    beside the match records. Seeds 3-7 retrain bit-identically only on CPU kernels like those that made
#    them (docs/reliability.md, "The same numbers on another CPU"); seed 0-2 cells predate the current
#    sampler and retrain as a new draw. Every cell's single-pass strength is therefore measured again here.
#    Then `pdx export lc0` writes each cell's EMA weights as a LINEAR16 .pb.gz (the encoding Lc0 v0.31
#    reads; it re-quantizes the folded weights, up to ~0.09 in a logit, which the pdx matches on the
#    checkpoint and on the exported file measure).
# 2. value: `pdx eval humans` on the base's and every cell's .pb.gz over the 999 real Lichess games of
#    data/lichess/ (Maia's filters): the value head's NLL of each game's result, paired with the base's
#    (clustered by game), beside the policy's move matching: what a search reads at its leaves.
# 3. valuemove: `pdx eval puzzles` on the base's and every cell's .pb.gz over the 1,986 real Lichess
#    puzzles of data/lichess/, scored by the policy's argmax and by the value head one ply deep
#    (`--move-by value`); value_move.py keeps the summaries, paired tests and solved bits.
# 4. temperature: temperature.py finds the Lc0 policy softmax temperature at which each cell's priors are
#    as spread as the base's at Lc0's default (records/temperature.json); matches.yaml's pilot match plays
#    the forward-KL cell at it.
# 5. matches: `pdx matches run reports/beyond_paper/matches.yaml`: every match of the list not played yet
#    (single pass on the checkpoint and on the exported file, the real Lc0 at 1, 16 and 64 nodes, the
#    Stockfish UCI_Elo ladder, the temperature pilot); matches.yaml says how each is played.
set -u
cd "$(dirname "$0")/../.."
V=${VENV:-.venv}; P=$V/bin/pdx; PY=$V/bin/python
export SHARED=${SHARED:-../shared}; BASE_PB=$SHARED/lc0/maia/maia-1900.pb.gz
W=runs/beyond_paper; E=$W/export; R=reports/beyond_paper/records
export OMP_NUM_THREADS=1 PDX_THREADS=1
# The networks these records were played with were retrained with the kernels the CPU offered (an AMD
# EPYC with AVX-512, before pdx held them to AVX2): native kernels retrain them on that kind of CPU.
export PDX_KERNELS=${PDX_KERNELS:-native}
[ "${DRY:-0}" = 1 ] || mkdir -p $W $E $R

# label | sweep config | cell | the committed records it is checked against
CELLS="fwd_s3 conf/sweep/maia_seeds8.yaml forward_kl-adaptive-b0.01-s3 reports/sweep_maia_seeds8/runs_json.tar.xz
rev_s3 conf/sweep/maia_seeds8.yaml reverse_kl-adaptive-b0.01-s3 reports/sweep_maia_seeds8/runs_json.tar.xz
none_s0 conf/sweep/maia_seeds8.yaml none-adaptive reports/sweep_maia_seeds8/runs_json.tar.xz"
[ "${B1024:-0}" = 1 ] && CELLS="$CELLS
fwd_b1024 conf/sweep/maia_batch1024.yaml forward_kl-adaptive-b0.01 reports/sweep_maia_1024/cells_json.tar.xz
none_b1024 conf/sweep/maia_batch1024.yaml none-adaptive reports/sweep_maia_1024/cells_json.tar.xz
recipe conf/sweep/maia_paper_recipe.yaml forward_kl-adaptive-b0.01 reports/sweep_maia_1024/paper_recipe/cells_json.tar.xz"

if [ -n "${ONLY:-}" ]; then
  for o in $ONLY; do grep -q "^$o " <<< "$CELLS" || { echo "run.sh: ONLY: no cell '$o'" >&2; exit 2; }; done
  CELLS=$(grep -E "^($(tr ' ' '|' <<< "$ONLY")) " <<< "$CELLS")
fi

run() { if [ "${DRY:-0}" = 1 ]; then printf '%q ' "$@"; echo; else "$@"; fi; }
out_of() { $PY -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['out'])" "$1"; }
exports() { # the base's and every cell's .pb.gz as --model arguments (the cells stage makes them)
  local label cfg cell archive
  echo "--model $BASE_PB"
  while read -r label cfg cell archive; do
    [ "${DRY:-0}" = 1 ] || [ -f $E/$label.pb.gz ] || { echo "run.sh: $E/$label.pb.gz: run the cells stage first" >&2; return 1; }
    echo "--model $E/$label.pb.gz"
  done <<< "$CELLS"
}
labels() { echo base; while read -r label cfg cell archive; do echo "$label"; done <<< "$CELLS"; }

cells() {
  [ -f "$BASE_PB" ] || { echo "run.sh: $BASE_PB: no released Maia-1900 (set SHARED)" >&2; exit 2; }
  while read -r label cfg cell archive; do
    local ck; ck="$(out_of $cfg)/cells/$cell/checkpoints/final.ckpt"
    [ -f $ck ] || run $P sweep --config $cfg --only $cell --no-stages || { echo "failed: train $label" >&2; continue; }
    [ -f $R/same_$label.json ] || run $PY reports/beyond_paper/same_cell.py $archive $cell "$(out_of $cfg)" $R/same_$label.json
    [ -f $E/$label.pb.gz ] || run $P export lc0 --model $ck --out $E/$label.pb.gz
  done <<< "$CELLS"
}

value() { # the value heads on real games: one record, humans_value
  [ -f $R/humans_value.json ] && return
  local models labels_=() l; models=$(exports) || return 1
  for l in $(labels); do labels_+=(--label "$l"); done
  # shellcheck disable=SC2086  # $models: --model PATH pairs, paths without spaces
  local cmd=($P eval humans $models "${labels_[@]}" --pgn data/lichess/games_2021-10_999.pgn.zst --json $W/humans_value.json)
  if [ "${DRY:-0}" = 1 ]; then run "${cmd[@]}"; return; fi
  "${cmd[@]}" > $W/humans_value.md || { echo "failed: value" >&2; return 1; }
  cp $W/humans_value.json $W/humans_value.md $R/ && echo "$(date -Is) finished value"
}

valuemove() { # the value heads' ranking of moves on real puzzles: one record, puzzles_value_move
  [ -f $R/puzzles_value_move.json ] && return
  local models by; models=$(exports) || return 1
  for by in policy value; do
    [ -f $W/puzzles_by_$by.json ] && continue
    # shellcheck disable=SC2086
    local cmd=($P eval puzzles $models --suite data/lichess/puzzles_random_2k.csv --device cpu --move-by $by
      --json $W/puzzles_by_$by.json)
    if [ "${DRY:-0}" = 1 ]; then run "${cmd[@]}"; continue; fi
    "${cmd[@]}" > $W/puzzles_by_$by.md || { echo "failed: valuemove ($by)" >&2; return 1; }
  done
  # shellcheck disable=SC2046
  run $PY reports/beyond_paper/value_move.py $W/puzzles_by_policy.json $W/puzzles_by_value.json \
    $R/puzzles_value_move.json $(labels) && { [ "${DRY:-0}" = 1 ] || echo "$(date -Is) finished valuemove"; }
}

temperature() { # the Lc0 policy temperature at which each cell's priors are as spread as the base's
  local cells=() label cfg cell archive
  while read -r label cfg cell archive; do cells+=($E/$label.pb.gz); done <<< "$CELLS"
  [ -f $R/temperature.json ] || run $PY reports/beyond_paper/temperature.py $BASE_PB $R/temperature.json "${cells[@]}"
}

matches() { # every match of the list not played yet (pdx matches: resumable, each record once)
  if [ "${DRY:-0}" = 1 ]; then run $P matches status reports/beyond_paper/matches.yaml; return; fi
  $P matches run reports/beyond_paper/matches.yaml --quiet
}

stages=${*:-all}
[ "$stages" = all ] && stages="cells value valuemove temperature matches"
for s in $stages; do
  case $s in
    cells|value|valuemove|temperature|matches) $s ;;
    *) echo "run.sh: unknown stage '$s' (cells, value, valuemove, temperature, matches, all)" >&2; exit 2 ;;
  esac
done
echo "run.sh: done ($stages)"
