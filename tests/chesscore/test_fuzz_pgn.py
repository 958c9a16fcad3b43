"""The reader fuzzer (``fuzz_pgn.py``): mutated real games, random bytes, truncations, damaged compressed
streams and decompression bombs end in games (every game counted once) or one line naming the file, never a
traceback, with the process's peak memory bounded; ~80 inputs in the default run, 3,000 in the slow run."""

from __future__ import annotations

import fuzz_pgn
import pytest

from pdx_lightning.chesscore.pgn_games import BAD_REASONS


def test_reader_fuzz_small():
    counts = fuzz_pgn.run(inputs=80, seed=1, max_mb=64, bomb_bytes=4 * fuzz_pgn.MiB)  # raises at a violation
    assert counts.inputs == 86 and set(counts.by_source) == {*fuzz_pgn.MUTATORS, "bomb"}
    assert set(counts.plain) == {"read", "refused:file", "refused:game"}  # all three outcomes reached
    assert set(counts.skip_bad) == {"read", "refused:file"}  # with skip_bad only a file is refused
    assert {"malformed", "merged", "truncated", "headers_only"} <= set(counts.games_skipped)
    assert counts.games_yielded > 0 and counts.max_peak_mb < 64


@pytest.mark.slow
def test_reader_fuzz_large():
    counts = fuzz_pgn.run(inputs=3000, seed=2, max_mb=64, bomb_bytes=64 * fuzz_pgn.MiB)
    assert counts.inputs == 3006
    assert set(counts.games_skipped) == set(BAD_REASONS)  # every reason reached
    assert counts.max_peak_mb < 64
