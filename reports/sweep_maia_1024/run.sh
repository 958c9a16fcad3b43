#!/bin/bash
# The paper's batch on Maia-1900: one 1,024-game cell (train + score), then 1,000 argmax games against the
# base on the 500 paired openings of data/openings_uho_600.epd. Run from a checkout with its .venv
# (the cells here ran from a worktree at bb8c0db). Resumable: the sweep resumes from the cell's last.ckpt.
#   bash reports/sweep_maia_1024/run.sh conf/sweep/maia_batch1024.yaml forward_kl-adaptive-b0.01 base1024_fwd
#   bash reports/sweep_maia_1024/run.sh conf/sweep/maia_batch1024.yaml none-adaptive base1024_none
#   PDX_THREADS=2 OMP_WAIT_POLICY=PASSIVE bash reports/sweep_maia_1024/run.sh \
#       conf/sweep/maia_paper_recipe.yaml forward_kl-adaptive-b0.01 base_paper_recipe
set -u
P=.venv/bin/pdx; O=data/openings_uho_600.epd; A=runs/arena36
cfg=$1; cell=$2; name=$3
mkdir -p $A
out=$(.venv/bin/python -c "import yaml; print(yaml.safe_load(open('$cfg'))['out'])")
$P sweep --config $cfg --only $cell --no-stages || exit 1
ck=$out/cells/$cell/checkpoints/final.ckpt
[ -f $A/$name.json ] || $P arena --model base:maia-1900 --label base --model $ck --label $name --games 1000 \
   --openings $O --json $A/$name.json --md $A/$name.md --quiet > $A/$name.log 2>&1
echo finished
