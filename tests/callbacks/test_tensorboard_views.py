"""What TensorBoard shows of a logdir holding both trainers' runs (issue 64 item 6): the Custom Scalars
tab as TensorBoard merges the two layouts, and the validation table of the Text tab."""

from __future__ import annotations

import json
import re

import pytest

from pdx_lightning.callbacks import PuzzleValidation
from pdx_lightning.callbacks.puzzle_validation import table_groups
from pdx_lightning.callbacks.tensorboard import LAYOUT, SEARCHED_LAYOUT


def _merged_layout(logdir) -> list[str]:
    """The category titles of the Custom Scalars tab, as TensorBoard's own plugin merges the runs' layouts."""
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.custom_scalar.custom_scalars_plugin import CustomScalarsPlugin

    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(logdir))
    plugin = CustomScalarsPlugin(base_plugin.TBContext(logdir=str(logdir), multiplexer=mux, data_provider=provider))
    merged = plugin.layout_impl(context.RequestContext(), "")  # the JSON the tab's page reads
    return [c["title"] for c in (json.loads(merged) if merged else {}).get("category", [])]


# TensorBoard's plugin imports its vendored bleach, whose html5lib warns on import (TensorBoard's, not ours)
@pytest.mark.filterwarnings("ignore:html5lib's sanitizer is deprecated:DeprecationWarning")
def test_both_trainers_keep_their_own_custom_scalars_sections(tmp_path):
    """TensorBoard merges the categories of one title across runs: two runs of one trainer share their
    sections, and a PDX run beside a searched run gives each trainer's sections, apart, in its own order."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    for run, layout in (("pdx/version_0", LAYOUT), ("pdx/version_1", LAYOUT), ("searched/version_0", SEARCHED_LAYOUT)):
        with SummaryWriter(tmp_path / run) as w:
            w.add_custom_scalars(layout)
    titles = _merged_layout(tmp_path)
    assert titles == [*LAYOUT, *SEARCHED_LAYOUT]
    assert len(titles) == len(set(titles)) == 11
    for prefix, layout in (("PDX · ", LAYOUT), ("searched · ", SEARCHED_LAYOUT)):
        assert all(t.startswith(prefix) for t in layout)
        numbers = [int(re.match(rf"{prefix}(\d+) ", t)[1]) for t in layout]
        assert numbers == list(range(1, len(layout) + 1))


def test_the_validation_table_is_narrow_groups_with_one_word_headers():
    """No table wider than six columns and no header longer than a short word: TensorBoard's Text tab
    squeezes a wide table until its headers break mid-word."""
    names = ["puzzles/acc", "puzzles/p_star_geo", "puzzles/p_star_arith", "puzzles/nll"]
    for d in (1, 2, 3, 4, 5):
        names += [f"mates/acc_{d}", f"mates/p_star_geo_{d}"]
    groups = table_groups(names)
    assert [title for title, _ in groups] == [
        "**puzzles** (`puzzles/acc`, `puzzles/p_star_geo`, `puzzles/p_star_arith`, `puzzles/nll`)",
        "**mates: accuracy by N** (`mates/acc_N`)",
        "**mates: geometric-mean p\\* by N** (`mates/p_star_geo_N`)",
    ]
    assert [[h for h, _ in cols] for _, cols in groups] == [
        ["acc", "p\\* geo", "p\\* arith", "NLL"],
        ["N=1", "N=2", "N=3", "N=4", "N=5"],
        ["N=1", "N=2", "N=3", "N=4", "N=5"],
    ]
    assert sorted(n for _, cols in groups for _, n in cols) == sorted(names)  # every value, once
    cb = PuzzleValidation(suite="", mates=[])
    cb.history = [(0, dict.fromkeys(names, 0.5)), (100, {**dict.fromkeys(names, 0.25), "mates/acc_3": 1.0})]
    text = cb.table()
    heads = [line for line in text.splitlines() if line.startswith("| step |")]
    assert len(heads) == 3 and all(len(h.split(" | ")) <= 6 for h in heads)
    assert "| 100 | 0.2500 | 0.2500 | 1.0000 | 0.2500 | 0.2500 |" in text  # mates/acc_N at step 100
    # a value the table does not know still gets a column, under its own (escaped) name
    assert table_groups(["x/some_value"]) == [("**x** (`x/some_value`)", [("some\\_value", "x/some_value")])]
