"""``pdx uci`` under the protocol fuzzer (``uci_fuzz.py``): real engine processes, random and hostile input,
quit / end of input / SIGTERM at random moments. Small in the default run, large in the slow run."""

from __future__ import annotations

import os

import pytest
from uci_fuzz import MODEL, Zygote, fuzz


@pytest.fixture(scope="module")
def zygote():
    z = Zygote("uci")
    yield z
    z.close()


def test_fuzz_sessions_keep_every_invariant(zygote):
    stats = fuzz(10, seed=0, max_commands=12, long_line_rate=0.3, zygote=zygote)
    assert stats.sessions == 10 and stats.gos > 0
    assert not stats.violations, "\n".join([stats.line(), *stats.violations])


def test_quit_and_end_of_input_while_the_model_loads_exit_0(zygote):
    # torch and the package already imported, the loader inside torch's C++ at exit: this aborted
    # ("terminate called without an active exception", SIGABRT) in most trials before the fix
    for i in range(6):
        proc = zygote.spawn(["--model", MODEL])
        if i % 2:
            proc.stdin.write(b"uci\nquit\n")
        proc.stdin.close()
        rc = proc.wait(60)
        err = os.read(proc.stderr, 1 << 16)
        os.close(proc.stderr), os.close(proc.stdout)
        assert (rc, err) == (0, b""), (i, rc, err)


@pytest.mark.slow
def test_fuzz_large():
    # `pdx uci` itself (the CLI's entry, every tool module imported), 50 MB lines, then fresh interpreters
    stats = fuzz(300, seed=1, fresh=6, entry="cli", huge=True)
    print(stats.line())
    assert stats.sessions == 306
    assert not stats.violations, "\n".join([stats.line(), *stats.violations[:20]])
