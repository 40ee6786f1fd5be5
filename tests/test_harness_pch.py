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


def _sandboxed_pch_root(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    """A PCH root whose compiler is a fake g++ inside it (the one folder of tmp_path a sandboxed maker can read), set
    as the evaluator's; returns the root and the compiler shim a build's requests name."""
    root = tmp_path / "pch"
    fake = root / "bin" / "fake-g++"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\nif [ "$1" = "-v" ]; then echo "gcc version 99.0 (fake)" >&2; exit 0; fi\n'
                    'out=""; prev=""\nfor a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
                    'echo pch > "$out"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    monkeypatch.setenv("KV_PCH_DIR", str(root))
    monkeypatch.delenv("PYTORCH_NVCC", raising=False)
    return root, B.compiler_shims(root)["CXX"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sandboxed PCH makers on Linux only")
def test_a_pch_a_build_missed_is_made_even_when_its_evaluator_closes_at_once(tmp_path, monkeypatch):
    """The evaluator makes a missed PCH in a background thread, sandboxed; an evaluator closed right after its build
    (a one-shot CLI evaluation, a test) once removed the temporary root that thread was about to make its work
    folder in, and the PCH was never made."""
    import harness

    root, shim = _sandboxed_pch_root(tmp_path, monkeypatch)
    requests = tmp_path / "pch-requests.jsonl"  # what a sandboxed build writes for a PCH it found missing
    requests.write_text(json.dumps({"cxx": shim, "cflags": CFLAGS, "post_cflags": ""}) + "\n")
    ev = harness.Evaluator("cpu", "small", cache_dir=tmp_path / "cache")
    ev._builder._make_missing_pchs(requests)
    ev.close()
    deadline = time.monotonic() + 120
    while B.ready_pch(root, shim, CFLAGS) is None:
        assert time.monotonic() < deadline, "the PCH was never made"
        time.sleep(0.5)


# Flags that would run or load a program, hand options to a sub-tool, write a file or add text to the header: the
# PCH is made outside the build's sandbox, from flags candidate code wrote, so none of these ever reaches a compile.
REFUSED_FLAGS = ["-wrapper /bin/sh,-c,touch\\ /tmp/x", "-B/tmp/bin", "-specs=/tmp/s", "--specs=/tmp/s",
                 "-fplugin=/tmp/p.so", "@/tmp/opts", "-Wp,-MD,/tmp/d", "-Xpreprocessor -MD", "-o /tmp/o", "-MD",
                 "-MF /tmp/d", "-save-temps", "-fdump-tree-all", "-include /tmp/h", "-fmodule-mapper=|/tmp/m",
                 "--sysroot=/tmp", "-fprofile-generate", "-fdiagnostics-format=sarif-file", "-isystem"]
# What candidates' extra_cflags hold (read from public kernels): these keep their PCH.
ORDINARY_FLAGS = "-O3 -march=native -mtune=native -mavx2 -mfma -ffast-math -fopenmp -funroll-loops -fno-math-errno " \
                 "-ffp-contract=fast -fvisibility=hidden -DNDEBUG -UNDEBUG -Wno-unused-variable -w -g0 -std=c++17 " \
                 "-I/opt/include -isystem /usr/local/cuda/include -pthread"


@pytest.mark.parametrize("flag", REFUSED_FLAGS)
def test_no_pch_is_made_with_a_flag_that_runs_a_program_or_writes_a_file(tmp_path, fake_cxx, flag):
    cxx, log = fake_cxx
    assert B.pch_flags_refused(shlex.split(f"{CFLAGS} {flag}")) is not None
    assert B.ensure_pch(tmp_path / "pch", cxx, f"{CFLAGS} {flag}") is None
    assert compiles(log) == [] and not [p for p in (tmp_path / "pch").glob("*") if B._is_pch_variant(p)]


def test_ordinary_candidate_flags_keep_their_pch(tmp_path, fake_cxx):
    cxx, log = fake_cxx
    assert B.pch_flags_refused(shlex.split(f"{CFLAGS} {ORDINARY_FLAGS}")) is None
    d = B.ensure_pch(tmp_path / "pch", cxx, f"{CFLAGS} {ORDINARY_FLAGS}")
    assert d is not None and (d / "torch" / "extension.h.gch").is_file()
    assert compiles(log)[0][5:] == [f for f in shlex.split(f"{CFLAGS} {ORDINARY_FLAGS}")
                                    if not f.startswith("-DTORCH_EXTENSION_NAME")]


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_eviction_never_follows_a_lock_planted_as_a_link_or_waits_on_a_fifo(tmp_path, fake_cxx, plant):
    """The evaluator (root) evicts; a maker once replaced its folder's ``.lock`` with a link, and the eviction's
    open created the file the link named."""
    import threading

    cxx, _log = fake_cxx
    root = tmp_path / "pch"
    made = [B.ensure_pch(root, cxx, f"{CFLAGS} -DV{i}") for i in range(B.MAX_PCH_VARIANTS)]
    target = tmp_path / "created-by-the-evaluator"
    (made[0] / ".lock").unlink()
    if plant == "symlink":
        (made[0] / ".lock").symlink_to(target)
    else:
        os.mkfifo(made[0] / ".lock")
    for i, d in enumerate(made):  # the planted one the least recently used, as its maker set it
        os.utime(d, (1000 + i, 1000 + i))
    t = threading.Thread(target=B._evict_pch_variants, args=(root, B.MAX_PCH_VARIANTS - 1), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "eviction blocked on the planted lock"
    assert not target.exists() and not target.is_symlink() and not made[0].exists()
    assert all(d.is_dir() for d in made[1:])


def test_a_pch_folder_keeps_only_a_pchs_files(tmp_path):
    d = tmp_path / "0123456789abcdef0123"
    (d / "torch").mkdir(parents=True)
    for name in ("torch/extension.h", "torch/extension.h.gch", ".lock", "failed"):
        (d / name).write_text("x")
    (d / "PWNED").write_text("x")
    (d / "ballast").mkdir()
    (d / "ballast" / "f").write_bytes(b"\0" * 1024)
    (d / "torch" / "extension.h.gch.tmp123").write_text("left by a killed maker")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (d / "link").symlink_to(outside)
    os.mkfifo(d / "torch" / "fifo")
    B.prune_pch_folder(d)
    left = sorted(p.relative_to(d).as_posix() for p in d.rglob("*"))
    assert left == [".lock", "failed", "torch", "torch/extension.h", "torch/extension.h.gch"]
    assert (outside / "keep").is_file()  # a link is removed, never followed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sandboxed PCH makers on Linux only")
def test_the_evaluator_makes_no_pch_from_a_request_whose_flags_would_run_a_program(tmp_path, monkeypatch):
    """A candidate's build lists the PCHs it missed in a file it can write: a request with ``-wrapper`` once had the
    evaluator's PCH maker (outside the build's sandbox) run the candidate's program in place of the compiler."""
    import harness

    root, shim = _sandboxed_pch_root(tmp_path, monkeypatch)
    bad, good = f"{CFLAGS} -wrapper /bin/sh,-c,true", f"{CFLAGS} -DGOOD"
    requests = tmp_path / "pch-requests.jsonl"
    requests.write_text("".join(json.dumps({"cxx": shim, "cflags": c, "post_cflags": ""}) + "\n" for c in (bad, good)))
    ev = harness.Evaluator("cpu", "small", cache_dir=tmp_path / "cache")
    ev._builder._make_missing_pchs(requests)
    ev.close()
    deadline = time.monotonic() + 120
    while B.ready_pch(root, shim, good) is None:  # the good request is made: the bad one had its chance too
        assert time.monotonic() < deadline, "the ordinary PCH was never made"
        time.sleep(0.5)
    time.sleep(1)
    assert [p.name for p in root.iterdir() if B._is_pch_variant(p)] == [B.ready_pch(root, shim, good).name]
