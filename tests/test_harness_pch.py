"""The build step's precompiled torch/extension.h (harness/build/build.py): keyed by flags, made once, safe to race."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.build import build as B

FAKE_CXX = """#!/bin/sh
# A stand-in for g++: "-v" prints a GCC banner; otherwise log the argv and write the -o file.
if [ "$1" = "-v" ]; then echo "gcc version 99.0 (fake)" >&2; exit 0; fi
echo "$@" >> "$FAKE_LOG"
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
[ -n "$FAKE_FAIL" ] && { echo "fake failure" >&2; exit 1; }
[ -n "$FAKE_SLEEP" ] && sleep "$FAKE_SLEEP"
echo pch > "$out"
"""
CFLAGS = "-DTORCH_EXTENSION_NAME=ext_a -DTORCH_API_INCLUDE_EXTENSION_H -isystem /inc -fPIC -std=c++20 -O3"


@pytest.fixture
def fake_cxx(tmp_path, monkeypatch):
    cxx = tmp_path / "fake-g++"
    cxx.write_text(FAKE_CXX)
    cxx.chmod(0o755)
    log = tmp_path / "compiles.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.delenv("FAKE_FAIL", raising=False)
    monkeypatch.delenv("FAKE_SLEEP", raising=False)
    return str(cxx), log


def compiles(log: Path) -> list[list[str]]:
    return [shlex.split(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_pch_is_made_once_with_the_ninja_flags_and_shared_across_extension_names(tmp_path, fake_cxx):
    import torch

    cxx, log = fake_cxx
    root = tmp_path / "pch"
    d = B.ensure_pch(root, cxx, CFLAGS)
    assert d is not None and (d / "torch" / "extension.h.gch").read_text() == "pch\n"
    header = Path(torch.__file__).parent / "include" / "torch" / "extension.h"
    assert (d / "torch" / "extension.h").read_text() == header.read_text()
    (argv,) = compiles(log)
    assert argv[:2] == ["-x", "c++-header"] and argv[2] == str(d / "torch" / "extension.h")
    assert argv[4].startswith(str(d / "torch" / "extension.h.gch.tmp"))  # written aside, then renamed
    assert argv[5:] == [f for f in CFLAGS.split() if not f.startswith("-DTORCH_EXTENSION_NAME")]
    assert not list((d / "torch").glob("*.tmp*"))
    # Same flags, another extension: the same PCH, no second compile.
    assert B.ensure_pch(root, cxx, CFLAGS.replace("ext_a", "ext_b")) == d
    assert len(compiles(log)) == 1
    # Other flags (-O2): another PCH, since GCC would reject this one.
    d2 = B.ensure_pch(root, cxx, CFLAGS.replace("-O3", "-O2"))
    assert d2 is not None and d2 != d and len(compiles(log)) == 2


def test_a_pch_being_made_elsewhere_is_not_waited_for(tmp_path, fake_cxx):
    cxx, log = fake_cxx
    root = tmp_path / "pch"
    d = B.ensure_pch(root, cxx, CFLAGS)
    (d / "torch" / "extension.h.gch").unlink()
    with open(d / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        t0 = time.perf_counter()
        assert B.ensure_pch(root, cxx, CFLAGS) is None
        assert time.perf_counter() - t0 < 5
    assert len(compiles(log)) == 1


def test_a_failed_pch_is_remembered_and_not_retried(tmp_path, fake_cxx, monkeypatch):
    cxx, log = fake_cxx
    monkeypatch.setenv("FAKE_FAIL", "1")
    root = tmp_path / "pch"
    assert B.ensure_pch(root, cxx, CFLAGS) is None
    (failed,) = root.glob("*/failed")
    assert "fake failure" in failed.read_text()
    assert not list(root.glob("*/torch/*.gch*"))
    monkeypatch.delenv("FAKE_FAIL")
    assert B.ensure_pch(root, cxx, CFLAGS) is None
    assert len(compiles(log)) == 1


def test_a_pch_that_timed_out_is_not_marked_failed_and_is_made_next_time(tmp_path, fake_cxx, monkeypatch):
    # A loaded host (CI) once timed a PCH out; a permanent "failed" marker then broke every later build's PCH.
    cxx, _log = fake_cxx
    root = tmp_path / "pch"
    monkeypatch.setenv("FAKE_SLEEP", "5")
    assert B.ensure_pch(root, cxx, CFLAGS, timeout_s=0.5) is None
    assert not list(root.glob("*/failed")) and not list(root.glob("*/torch/*.gch*"))
    monkeypatch.delenv("FAKE_SLEEP")
    d = B.ensure_pch(root, cxx, CFLAGS, timeout_s=30)
    assert d is not None and (d / "torch" / "extension.h.gch").is_file()


def test_no_pch_for_other_compilers_and_the_least_recently_used_variant_makes_room(tmp_path, fake_cxx):
    cxx, log = fake_cxx
    clang = tmp_path / "clang++"
    clang.write_text('#!/bin/sh\necho "clang version 18.0.0" >&2\n')
    clang.chmod(0o755)
    assert B.ensure_pch(tmp_path / "p1", str(clang), CFLAGS) is None
    root = tmp_path / "p2"
    # The compiler shims live in the same root (harness.builds.pch_dir) and are older than any PCH: eviction
    # must leave them, or builds in flight fail with "kv-shims/<hash>/c++: not found".
    shims = B.compiler_shims(root)
    os.utime(Path(shims["CXX"]).parents[1], (1, 1))
    made = []
    for i in range(B.MAX_PCH_VARIANTS):
        made.append(B.ensure_pch(root, cxx, f"{CFLAGS} -DV{i}"))
        os.utime(made[-1], (1000 + i, 1000 + i))
    assert None not in made
    assert B.ensure_pch(root, cxx, f"{CFLAGS} -DV0") == made[0]  # used again: now the most recent
    extra = B.ensure_pch(root, cxx, f"{CFLAGS} -DV{B.MAX_PCH_VARIANTS}")
    assert extra is not None and extra.is_dir()
    assert not made[1].exists() and made[0].is_dir()  # V1 was the least recently used
    assert len([p for p in root.iterdir() if p.is_dir() and p.name != B.SHIM_DIR]) == B.MAX_PCH_VARIANTS
    assert all(Path(s).is_file() for s in shims.values()) and B.compiler_shims(root) == shims


def test_the_hook_gives_each_extension_the_pch_of_its_own_flags(tmp_path, fake_cxx, monkeypatch):
    import torch.utils.cpp_extension as cx

    cxx, log = fake_cxx
    for var in ("CXX", "PYTORCH_NVCC", "KV_PCH_DIR", "KV_OBJECT_CACHE_DIR", "KV_PCH_INCLUDE", "KV_PCH_WAIT_S",
                "KV_PCH_WAIT_MAX_S"):
        # setenv first: delenv of an unset variable records nothing to undo, and the hook sets them all, so they
        # leaked into later tests (a compiler shim under this test's deleted temporary folder)
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)

    def fake_write_ninja_file(path, cflags, with_cuda=False, **_):
        Path(path).write_text(f"ninja_required_version = 1.3\ncxx = {cxx}\n\ncflags = {' '.join(cflags)}\n"
                              f"post_cflags = \n")

    monkeypatch.setattr(cx, "_write_ninja_file", fake_write_ninja_file)
    monkeypatch.setenv("KV_PCH_WAIT_MAX_S", "120")  # opt in: builds wait for a PCH being made (at most 60 s here)
    B.enable_build_caches(tmp_path / "pch", None, timeout_s=60)
    assert cx._write_ninja_file is not fake_write_ninja_file
    assert "/kv-shims/" in os.environ["CXX"]
    dirs = []
    for name, flags in (("a", CFLAGS), ("b", CFLAGS + " -O1")):
        path = str(tmp_path / f"{name}.ninja")
        # The first build does not wait here: a detached process makes the PCH, and the launcher's
        # compile of main.cpp is told to wait for it (the folder and a time limit).
        cx._write_ninja_file(path=path, cflags=flags.split())
        pending = Path(os.environ["KV_PCH_INCLUDE"])
        assert float(os.environ["KV_PCH_WAIT_S"]) == 60
        assert not (pending / "torch" / "extension.h.gch").is_file()
        deadline = time.monotonic() + 120
        while not (pending / "torch" / "extension.h.gch").is_file():
            assert time.monotonic() < deadline, "the background PCH never appeared"
            time.sleep(0.5)
        assert B.pending_pch(tmp_path / "pch", cxx, flags) is None  # made: nothing left to wait for
        cx._write_ninja_file(path=path, cflags=flags.split())  # a later build: ready, no waiting
        assert os.environ["KV_PCH_INCLUDE"] == str(pending) and "KV_PCH_WAIT_S" not in os.environ
        dirs.append(pending)
    assert dirs[0] != dirs[1] and all((d / "torch" / "extension.h.gch").is_file() for d in dirs)
    assert len(compiles(log)) == 2  # one PCH per flag set, however many builds asked
    # Not opted in (the default): a build whose PCH is being made compiles without it.
    monkeypatch.delenv("KV_PCH_WAIT_MAX_S")
    cx._write_ninja_file(path=str(tmp_path / "c.ninja"), cflags=(CFLAGS + " -O0").split())
    assert "KV_PCH_INCLUDE" not in os.environ and "KV_PCH_WAIT_S" not in os.environ


@pytest.mark.slow
@pytest.mark.xdist_group("sigmoid_build")  # shares tests/conftest.py's build with test_harness_compile_cache.py
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="GCC PCH on Linux only")
def test_a_real_build_compiles_against_a_valid_pch(sigmoid_built):
    """A demo kernel built by the Evaluator; GCC, given the extension's own flags, accepts the PCH."""
    from harness.builds import pch_dir

    root = pch_dir()
    if root is None:
        pytest.skip("KV_PCH_DIR is empty: PCH off")
    if B._compiler_id(["c++"]) is None:
        pytest.skip("the C++ compiler is not GCC")
    assert sigmoid_built.first.ok, sigmoid_built.first.error
    (ninja,) = sigmoid_built.ext.glob("*/build.ninja")
    v = B._ninja_vars(ninja)
    assert "/kv-shims/" in v["cxx"]  # torch's compiler, through the launcher
    deadline = time.monotonic() + 600  # made in the background by the first build that needed it
    while (d := B.ensure_pch(root, v["cxx"], v["cflags"], v.get("post_cflags", ""))) is None:
        assert not list(root.glob("*/failed")), "PCH failed"
        assert time.monotonic() < deadline
        time.sleep(2)
    main = ninja.parent / "main.cpp"
    r = subprocess.run([*shlex.split(v["cxx"]), "-I", str(d), "-H", "-fsyntax-only", *shlex.split(v["cflags"]), str(main)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"! {d / 'torch' / 'extension.h.gch'}" in r.stderr  # "!": GCC found the PCH valid and used it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sandboxed PCH makers on Linux only")
def test_a_pch_a_build_missed_is_made_even_when_its_evaluator_closes_at_once(tmp_path, monkeypatch):
    """The evaluator makes a missed PCH in a background thread, sandboxed; an evaluator closed right after its build
    (a one-shot CLI evaluation, a test) once removed the temporary root that thread was about to make its work
    folder in, and the PCH was never made."""
    import harness

    root = tmp_path / "pch"
    fake = root / "bin" / "fake-g++"  # inside the PCH root: the one folder of tmp_path a sandbox can read
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\nif [ "$1" = "-v" ]; then echo "gcc version 99.0 (fake)" >&2; exit 0; fi\n'
                    'out=""; prev=""\nfor a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
                    'echo pch > "$out"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    monkeypatch.setenv("KV_PCH_DIR", str(root))
    monkeypatch.delenv("PYTORCH_NVCC", raising=False)
    shim = B.compiler_shims(root)["CXX"]
    requests = tmp_path / "pch-requests.jsonl"  # what a sandboxed build writes for a PCH it found missing
    requests.write_text(json.dumps({"cxx": shim, "cflags": CFLAGS, "post_cflags": ""}) + "\n")
    ev = harness.Evaluator("cpu", "small", cache_dir=tmp_path / "cache")
    ev._builder._make_missing_pchs(requests)
    ev.close()
    deadline = time.monotonic() + 120
    while B.ready_pch(root, shim, CFLAGS) is None:
        assert time.monotonic() < deadline, "the PCH was never made"
        time.sleep(0.5)
