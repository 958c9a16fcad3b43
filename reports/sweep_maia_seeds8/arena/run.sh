#!/bin/bash
# issue 36 arenas: 1,000 argmax games vs the base per new cell (500 paired openings of openings_uho_600),
# and 1,000 games forward KL vs reverse KL of the same seed. One process, one thread; resumable by file.
cd /work/wt36
P=.venv/bin/pdx; O=data/openings_uho_600.epd; A=runs/arena36
ck() { echo "$1/cells/$2/checkpoints/final.ckpt"; }
one() { # name, games, models...
  local name=$1; shift; [ -f $A/$name.json ] && return
  $P arena "$@" --openings $O --json $A/$name.json --md $A/$name.md --quiet > $A/$name.log 2>&1
}
one base1024_fwd --model base:maia-1900 --label base --model $(ck runs/sweep_maia_1024 forward_kl-adaptive-b0.01) --label forward_kl-b1024 --games 1000
for s in 3 4 5 6 7; do
  f=$(ck runs/sweep_maia forward_kl-adaptive-b0.01-s$s); r=$(ck runs/sweep_maia reverse_kl-adaptive-b0.01-s$s)
  while [ ! -f $r ] || [ ! -f $f ]; do sleep 30; done
  one fwd_vs_rev_s$s --model $f --label forward_kl-s$s --model $r --label reverse_kl-s$s --games 1000
  one base_fwd_s$s --model base:maia-1900 --label base --model $f --label forward_kl-s$s --games 1000
  one base_rev_s$s --model base:maia-1900 --label base --model $r --label reverse_kl-s$s --games 1000
done
