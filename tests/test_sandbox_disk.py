"""What a sandboxed process may write to disk is capped by the kernel (harness.sandbox.disk): a tmpfs of
``EvalSettings.sandbox_disk_bytes`` over a build's work and extensions folders and an evaluation's work folder.
Before, those folders lay on the host disk: a candidate writing without end filled it for every process on the host,
and the evaluator read the ENOSPC as its own failure (no verdict). Now the write fails inside the sandbox and is the
candidate's error; an honest build is still filed on the cache's disk and loaded."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import harness
from harness.sandbox import disk

CAP = 32 * 2**20
SETTINGS = harness.EvalSettings(naive_timing_trials=5, verified_min_iters=5, verified_max_iters=10,
                                verified_seconds_per_subject=0.3, cpu_threads=1, sandbox_disk_bytes=CAP)
RELU = "level1/19_ReLU"

# Writes 8 MiB files into its working folder until the writes fail, then re-raises: 4x the cap if it could.
FILLS_WORK = textwrap.dedent("""
    import os, torch, torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            block = b"x" * (8 << 20)
            for i in range(16):
                with open(f"ballast{i}", "wb") as f:
                    f.write(block)
            return torch.relu(x)
""")

# A source that builds ahead (it names load_inline) and fills its extensions folder while the build imports it.
FILLS_EXT = textwrap.dedent("""
    import os, torch, torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    block = b"x" * (8 << 20)
    for i in range(16):
        with open(os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], f"ballast{i}"), "wb") as f:
            f.write(block)

    class ModelNew(nn.Module):
        def forward(self, x):
            return torch.relu(x)
""")


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    return [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
            if line.split()[1].startswith(prefix)]


requires_mount = pytest.mark.skipif(os.geteuid() != 0, reason="the evaluator mounts the caps as root (CI does)")


@requires_mount
def test_cap_persist_and_release(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    assert disk.cap(folder, CAP) and disk.is_capped(folder)
    assert os.statvfs(folder).f_blocks * os.statvfs(folder).f_frsize == CAP
    with pytest.raises(OSError, match="No space left"), open(folder / "big", "wb") as f:
        f.write(b"x" * (CAP + 2**20))
    (folder / "big").unlink()
    (folder / "kept").write_text("filed")
    os.symlink("kept", folder / "link")
    os.mkfifo(folder / "pipe")  # a build may leave one: not copied (a copy would block or raise), not kept
    disk.persist(folder)  # moved onto the disk below: the mount is gone, the files and the link stay
    assert not disk.is_capped(folder) and not _mounts_under(tmp_path)
    assert (folder / "kept").read_text() == "filed" and os.readlink(folder / "link") == "kept"
    assert not (folder / "pipe").exists()
    other = tmp_path / "g"
    other.mkdir()
    assert disk.cap(other, CAP)
    disk.release(other)
    assert not other.exists() and not _mounts_under(tmp_path)


@requires_mount
def test_a_candidate_filling_its_work_folder_gets_its_own_error_and_the_disk_is_spared():
    free = os.statvfs("/tmp").f_bavail * os.statvfs("/tmp").f_frsize
    with harness.Evaluator("cpu", "small", settings=SETTINGS) as ev:
        r = ev.evaluate(FILLS_WORK, RELU)
        root = ev._tmp_root
        assert not _mounts_under(root), "the candidate's capped folder outlived its evaluation"
    assert r.record.status == "runtime_error" and "No space left on device" in r.record.error, r.record.error
    assert r.results["naive"].verdict == "runtime_error"
    after = os.statvfs("/tmp").f_bavail * os.statvfs("/tmp").f_frsize
    assert free - after < CAP  # nothing near the 128 MiB it tried to write landed on the host disk
    assert not root.exists()


@requires_mount
def test_a_build_filling_its_extensions_folder_is_a_compile_error_and_nothing_is_filed(tmp_path):
    with harness.Evaluator("cpu", "small", settings=SETTINGS, cache_dir=tmp_path) as ev:
        r = ev.evaluate(FILLS_EXT, RELU)
        ext = ev.extensions_dir(FILLS_EXT)
        assert not _mounts_under(tmp_path) and not _mounts_under(ev._tmp_root)
    assert r.record.status == "compile_error" and "No space left on device" in r.record.error, r.record.error
    assert not any(ext.iterdir()), "what the failed build left was kept"
