"""The one atomic-write helper: old file or new file, never a torn one, no temporary left behind."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from pdx_lightning.files.atomicfile import atomic_write, atomic_write_text, remove_stale_temps, temp_prefix


def test_writes_the_new_content_and_leaves_only_the_target(tmp_path):
    target = tmp_path / "sub" / "a.bin"  # the parent is created
    with atomic_write(target) as f:
        f.write(b"new")
    assert target.read_bytes() == b"new"
    assert os.listdir(target.parent) == ["a.bin"]
    with atomic_write(target, "w", newline="") as f:
        f.write("x\r\ny\n")
    assert target.read_bytes() == b"x\r\ny\n"
    assert os.listdir(target.parent) == ["a.bin"]


def test_a_raising_writer_leaves_the_old_target_and_no_temporary(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    seen = []
    with pytest.raises(RuntimeError, match="disk on fire"), atomic_write(target, "w") as f:
        f.write("half of the new")
        seen.append(f.name)
        raise RuntimeError("disk on fire")
    assert target.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]
    assert os.path.dirname(seen[0]) == str(tmp_path)  # it was written in the target's directory
    with pytest.raises(KeyboardInterrupt), atomic_write(tmp_path / "b.txt", "w") as f:  # an interrupt too
        raise KeyboardInterrupt
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]  # an absent target stays absent


def test_temporary_names_are_unique_hidden_and_in_the_same_directory(tmp_path):
    target = tmp_path / "shard_00001.npz"
    with atomic_write(target) as f1, atomic_write(target) as f2:
        names = {os.path.basename(f1.name), os.path.basename(f2.name)}
        assert len(names) == 2
        assert {os.path.dirname(f1.name), os.path.dirname(f2.name)} == {str(tmp_path)}
        for n in names:
            assert n.startswith(f".shard_00001.npz.tmp-{os.getpid()}-")
        # the shard generators' leftover glob still finds them
        assert {p.name for p in tmp_path.glob(".shard_*.npz.tmp-*")} == names
        f1.write(b"one")
        f2.write(b"two")
    assert target.read_bytes() == b"one"  # the last to finish wins (f1 closes last)
    assert os.listdir(tmp_path) == ["shard_00001.npz"]


def test_fsyncs_the_file_before_the_rename_and_the_directory_after(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        st = os.fstat(fd)
        calls.append(("fsync-dir" if stat.S_ISDIR(st.st_mode) else "fsync-file", st.st_ino))
        real_fsync(fd)

    def replace(a, b):
        calls.append(("replace", os.stat(a).st_ino))
        real_replace(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    target = tmp_path / "a.bin"
    with atomic_write(target) as f:
        f.write(b"x")
    file_ino, dir_ino = target.stat().st_ino, tmp_path.stat().st_ino
    assert calls == [("fsync-file", file_ino), ("replace", file_ino), ("fsync-dir", dir_ino)]


def test_new_files_get_the_umask_permissions_like_open(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "a.bin") as f:
            f.write(b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.bin").stat().st_mode) == 0o644  # mkstemp would give 0600


def test_remove_stale_temps_clears_other_processes_leftovers_only(tmp_path):
    target = tmp_path / "last.ckpt"
    target.write_bytes(b"ckpt")
    dead = tmp_path / f"{temp_prefix(target, 'partial')}99999999-deadbeef"
    dead.write_bytes(b"half")
    other_target = tmp_path / f"{temp_prefix(tmp_path / 'last-v1.ckpt', 'partial')}99999999-0"
    other_target.write_bytes(b"half")
    with atomic_write(target, tag="partial") as f:
        assert remove_stale_temps(target, "partial") == [dead]  # not our own open one, not another target's
        f.write(b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["last.ckpt", other_target.name])


def test_mode_is_checked(tmp_path):
    with pytest.raises(ValueError, match="mode must be"), atomic_write(tmp_path / "a", "a"):
        pass


def test_kill_9_mid_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")
    code = (
        "import os, signal, sys\nfrom pdx_lightning.files.atomicfile import atomic_write\n"
        "with atomic_write(sys.argv[1]) as f:\n"
        "    f.write(b'ne'); f.flush(); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=120)
    assert r.returncode < 0, r.stderr
    assert target.read_bytes() == b"old"
    left = [p for p in tmp_path.iterdir() if p != target]
    assert len(left) == 1 and left[0].name.startswith(".a.bin.tmp-")
    assert remove_stale_temps(target) == left and sorted(os.listdir(tmp_path)) == ["a.bin"]


def test_atomic_write_text_replaces_as_write_text_does(tmp_path):
    target = tmp_path / "sub" / "report.md"
    atomic_write_text(target, "ünïcode\n")
    assert target.read_bytes() == "ünïcode\n".encode()
    atomic_write_text(target, "second")
    assert target.read_text() == "second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.md"]


def test_every_replacing_writer_goes_through_atomic_write():
    """No module replaces a file with ``Path.write_text``/``write_bytes`` or a hand-made temp + rename
    (append-only streams, e.g. PGN and CSV logs, open files themselves and are not replacements)."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    offenders = []
    for path in [*(root / "pdx_lightning").rglob("*.py"), *(root / "callbacks").rglob("*.py")]:
        if path.name == "atomicfile.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"\.write_text\(|\.write_bytes\(|os\.replace\(|os\.rename\(", code):
                offenders.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert offenders == []
