"""``pdx report --runs DIR --out DIR``: the paper's tables and figures, rebuilt from stored JSON only.

``--runs`` is a ``pdx sweep`` output directory (layout in :mod:`pdx_lightning.experiments.sweep`):
``sweep.json``, ``base/eval.json`` and ``cells/<cell>/{result,eval}.json``
(schema ``pdx_cell_eval/1``, :mod:`pdx_lightning.experiments.sweep.evaluate`), and whichever of
these exist (a missing file makes its table say *not measured*; nothing is estimated):

* ``arena.json`` / ``arena_sampled.json`` — ``pdx arena --json`` (argmax / ``--sample``):
  ``players[{label, model}]``, ``elo.ratings[{player, elo, ci95}]`` (base anchored at 0),
  ``head_to_head[{player, opponent, w, d, l, los}]`` → Table 1 Elo, W–D–L, LOS; Table 5 Elo.
* ``diagnostics.json`` — ``pdx eval diagnostics --json`` → Table 5::

      {"models": [{"name", "play": "raw"|"adaptive", "entropy": {"mean"}, "forward_kl": {"mean"},
                   "reverse_kl": {"mean"}, "cov_k": {"mean"}}], "top_k": 5}

* ``coverage.json`` — ``pdx eval coverage --json`` → Figure 7::

      {"depths": [N, ...] (older files: "depth": N), "target": 0.95, "positions": [{"name"}],
       "results": [{"model", "play", "position", "depth", "curve": {"k": [...], "mean": [...]},
                    "draws_to_target": {"mean", "std"}}]}

* ``recovery.json`` — ``pdx eval recovery --json`` (schema in :mod:`pdx_lightning.evaluation.recovery`;
  read: ``models[{name, position: {base_wrong, recovered, given_back, by_prob[{bin, n, recovered}],
  by_rank[...]}}]``) → Figure 8. Without it the report computes the same entries with
  ``recovery_analysis`` from the per-position arrays of the ``tactics`` suite in the eval JSONs, and says so.

* ``humans.json`` — ``pdx eval humans --json`` (schema in :mod:`pdx_lightning.evaluation.humans`; read:
  ``models[{name, label, overall{positions, top1, top1_ci, top5, top5_ci, nll}, by_rating[...]}]``,
  ``paired[{model, label, overall{top1_diff, gained, lost, mcnemar_p, nll_diff, nll_diff_ci}}]``) → the
  "Human move-matching" section, present only when the file is.

Models are matched to rows by arena label, model string or checkpoint path (the sweep passes
checkpoint paths and cell names).

Modules: :mod:`.runs` (reading the directory, Table 1's rows), :mod:`.tables` (Markdown tables),
:mod:`.recovery_tables` (Figure 8's numbers), :mod:`.seeds` (arms across seeds: each seed and the aggregate),
:mod:`.real` (Table 1 on real Lichess puzzles, Figure 6 right), :mod:`.figures` (PNGs), :mod:`.report_command`
(``pdx report``).
"""
