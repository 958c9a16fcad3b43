"""``pdx sweep``: the exploration-term × temperature × β matrix (paper Section 3.1, Appendix G, Table 6).

Every cell fine-tunes the same base with the same compute (steps, games, seeds); only the
exploration term, its weight β and the self-play temperature vary. β = 0 is the ``none`` arm (one
cell per temperature); the supervised puzzle-tuned control (Section 3.6,
:mod:`pdx_lightning.supervised.control`) is one more cell with the same step budget.

Modules, in the order a run uses them:

* :mod:`.config`   the sweep YAML (typed dataclasses read with jsonargparse) and the cells it plans;
* :mod:`.lock`     matched compute: one output directory, one set of settings;
* :mod:`.train`    a cell's LightningCLI config and its (resumed) training subprocess;
* :mod:`.evaluate` a cell's EMA scored on every suite, paired with the base;
* :mod:`.record`   β* per arm, ``sweep.json``, ``table6.md`` (a table of :mod:`..report`);
* :mod:`.stages`   the optional arena and analysis stages;
* :mod:`.sweep_command`  ``pdx sweep``: arguments, checks before training, the run.

Layout of ``<out>`` (what :mod:`pdx_lightning.experiments.report` reads)::

    sweep.json                  config, cells, β* per (term, temperature), file map
    table6.md                   β selection on the selection suite (Wilson intervals)
    config.lock.json            the settings every cell here was made with
    base/eval.json              the frozen base on every suite (schema ``pdx_cell_eval/1``)
    cells/<cell>/fit.yaml       the cell's full config; fit.log its output
    cells/<cell>/tb/version_0   its TensorBoard run: training scalars + hparams with final metrics
                                (absent when `--trainer.logger` chose another tracker: train.tracker_args)
    cells/<cell>/csv/…          the same scalars as CSV (final training metrics are read here, always)
    cells/<cell>/checkpoints/   last.ckpt (periodic, resume) and final.ckpt (end of training)
    cells/<cell>/eval.json      its EMA on every suite, paired with the base
    cells/<cell>/result.json    the cell is finished: a rerun skips it
    arena.json, arena_sampled.json, coverage.json, diagnostics.json, recovery.json   (optional stages)

Resuming: a cell with ``result.json`` is skipped; one with ``final.ckpt`` is only evaluated; one with
``checkpoints/last.ckpt`` resumes training from it (``--ckpt_path``, the same games and optimizer).
Optional stages are skipped when their JSON exists.
"""
