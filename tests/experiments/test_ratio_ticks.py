"""Figure 1's log-scaled ratio axis: labelled ticks that never crowd (0.8×, 0.9× and 1× overlapped)."""

import itertools
import math

import pytest

from pdx_lightning.experiments.report.figures import ratio_ticks


@pytest.mark.parametrize(
    "lo, hi", [(1.01, 1.09), (0.75, 3.5), (0.3, 1.2), (0.9, 1.1), (0.01, 100.0), (1.1, 1.9), (0.02, 0.08)]
)
def test_ticks_are_inside_apart_and_include_one_when_in_range(lo, hi):
    ticks = ratio_ticks(lo, hi)
    assert ticks == sorted(ticks) and ticks and all(lo <= t <= hi for t in ticks)
    gaps = [math.log10(b / a) for a, b in itertools.pairwise(ticks)]
    assert all(g >= 0.1 * math.log10(hi / lo) - 1e-12 for g in gaps)
    assert (1.0 in ticks) == (lo <= 1.0 <= hi)


def test_the_collision_of_the_sweep_report_is_gone():
    # reports/sweep_cpu's Figure 1 spans about 0.75x to 3.5x: 0.8x and 0.9x were labelled beside 1x
    assert ratio_ticks(0.75, 3.5) == [0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0]
    assert ratio_ticks(0.01, 100.0) == [0.01, 0.1, 1.0, 10.0, 100.0]  # a wide axis: powers of ten only
    assert ratio_ticks(0.05, 2.0) == [0.05, 0.1, 0.2, 0.5, 1.0, 2.0]  # past one decade: 1, 2 and 5
    assert ratio_ticks(2.0, 1.0) == [1.0] and ratio_ticks(0.0, 1.0) == [1.0]  # no range: the reference only
    assert ratio_ticks(1.01, 1.09) == [1.05]  # no round ratio inside: one labelled tick, not none
